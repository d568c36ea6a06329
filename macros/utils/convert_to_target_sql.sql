{#- `expr` as a column of type `data_type` (and `collation`) stores it; NULL where it cannot be
    stored (the source check counts those and refuses the run). -#}
{% macro convert_to_target_sql(expr, data_type, collation=none) %}
  {{ return(adapter.dispatch('convert_to_target_sql', 'dbt_merge')(expr, data_type, collation)) }}
{% endmacro %}

{% macro default__convert_to_target_sql(expr, data_type, collation) %}
  {{ return('try_cast(' ~ expr ~ ' as ' ~ data_type ~ ')') }}
{% endmacro %}

{# DuckDB: a collated column (e.g. VARCHAR COLLATE NOCASE) compares and groups by its collation;
   a value carries the collation into joins and count(distinct ...). #}
{% macro duckdb__convert_to_target_sql(expr, data_type, collation) %}
  {% set converted = 'try_cast(' ~ expr ~ ' as ' ~ data_type ~ ')' %}
  {{ return('(' ~ converted ~ ' collate ' ~ collation ~ ')' if collation else converted) }}
{% endmacro %}
