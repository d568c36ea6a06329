{#- A config value that may be a string or a list, as a list of trimmed, non-empty strings. -#}
{% macro as_list(value) %}
  {% if value is none %}
    {{ return([]) }}
  {% elif value is string %}
    {{ return([value | trim] if value | trim else []) }}
  {% else %}
    {% set items = [] %}
    {% for item in value %}
      {% if item is not none and (item | string | trim) %}
        {% do items.append(item | string | trim) %}
      {% endif %}
    {% endfor %}
    {{ return(items) }}
  {% endif %}
{% endmacro %}
