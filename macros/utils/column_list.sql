{#- Quoted, comma-separated column names, optionally prefixed with a table alias. -#}
{% macro column_list(names, alias=none) %}
  {% set parts = [] %}
  {% for name in names %}
    {% do parts.append((alias ~ '.' if alias else '') ~ dbt_merge.quote_identifier(name)) %}
  {% endfor %}
  {{ return(parts | join(', ')) }}
{% endmacro %}
