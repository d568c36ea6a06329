{#- The column of `columns` (dbt Columns) named `name` ignoring case, or none. -#}
{% macro column_named(name, columns) %}
  {% set found = dbt_merge.find_column(name, (columns or []) | map(attribute='name') | list) %}
  {{ return((columns or []) | selectattr('name', 'equalto', found) | first if found is not none else none) }}
{% endmacro %}
