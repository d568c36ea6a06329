{#- The staged SELECT with one row per key: the first by dedup_order_by (checked free of ties). -#}
{% macro dedupe_source_sql(plan) %}
  {{ return(adapter.dispatch('dedupe_source_sql', 'dbt_merge')(plan)) }}
{% endmacro %}

{% macro default__dedupe_source_sql(plan) %}
  select {{ dbt_merge.column_list(plan.source_names) }}
  from (
    select *, row_number() over (
      partition by {{ dbt_merge.column_list(plan.key_columns) }} {{ dbt_merge.dedup_order_clause(plan) }}
    ) as dbt_merge_row
    from {{ plan.stage }}
  ) as dbt_merge_numbered
  where dbt_merge_row = 1
{% endmacro %}

{# DuckDB filters window results in place with QUALIFY (no extra column to project away). #}
{% macro duckdb__dedupe_source_sql(plan) %}
  select * from {{ plan.stage }}
  qualify row_number() over (
    partition by {{ dbt_merge.column_list(plan.key_columns) }} {{ dbt_merge.dedup_order_clause(plan) }}
  ) = 1
{% endmacro %}
