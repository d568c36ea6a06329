{#- The column of `names` equal to `name` ignoring case (both engines fold identifiers), or none. -#}
{% macro find_column(name, names) %}
  {% for candidate in names %}
    {% if candidate | lower == name | lower %}
      {{ return(candidate) }}
    {% endif %}
  {% endfor %}
  {{ return(none) }}
{% endmacro %}
