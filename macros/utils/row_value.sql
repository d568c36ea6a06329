{#- One value for a whole row, comparable for equality with NULLs equal (for count(distinct ...)). -#}
{% macro row_value(names) %}
  {{ return(adapter.dispatch('row_value', 'dbt_merge')(names)) }}
{% endmacro %}

{% macro default__row_value(names) %}
  {{ return('struct(' ~ dbt_merge.column_list(names) ~ ')') }}
{% endmacro %}

{# DuckDB has no struct(); row() builds the same unnamed struct. #}
{% macro duckdb__row_value(names) %}
  {{ return('row(' ~ dbt_merge.column_list(names) ~ ')') }}
{% endmacro %}
