{#- One value for a whole row, comparable for equality with NULLs equal (for count(distinct ...));
    `compare`: the plan's compare_kinds, to compare the row byte for byte (compared_value). -#}
{% macro row_value(names, compare=none) %}
  {{ return(adapter.dispatch('row_value', 'dbt_merge')(names, compare)) }}
{% endmacro %}

{% macro default__row_value(names, compare=none) %}
  {{ return('struct(' ~ dbt_merge.column_list(names) ~ ')') }}
{% endmacro %}

{# DuckDB has no struct(); row() builds the same unnamed struct. #}
{% macro duckdb__row_value(names, compare=none) %}
  {{ return('row(' ~ dbt_merge.compared_list(compare, names) ~ ')') }}
{% endmacro %}
