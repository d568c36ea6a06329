{#- A config value that may be a string or a list, as a list of non-blank strings, kept as written:
    a column's name may begin or end with a space, so names are not trimmed. -#}
{% macro as_list(value) %}
  {% if value is none %}
    {{ return([]) }}
  {% elif value is string %}
    {{ return([value] if value | trim else []) }}
  {% else %}
    {% set items = [] %}
    {% for item in value %}
      {% if item is not none and (item | string | trim) %}
        {% do items.append(item | string) %}
      {% endif %}
    {% endfor %}
    {{ return(items) }}
  {% endif %}
{% endmacro %}
