{#-
  The staged SELECT narrowed to the rows deduplicate may keep, for each key:
    - without dedup_order_by, its distinct rows (more than one: the rows differ, an error);
    - with it, the rows ranked first (more than one: a tie, an error unless they are identical);
    - with one_per_key, exactly one of the rows ranked first (used once the check found that
      some keys' first rows are identical repeats).
  check_source_rows then looks only at the keys with more than one row left, instead of
  comparing every row of every key.
-#}
{% macro dedupe_source_sql(plan, one_per_key=false) %}
  {% if not plan.order_by %}
    {{ return(adapter.dispatch('distinct_rows_sql', 'dbt_merge')(plan)) }}
  {% endif %}
  {{ return(adapter.dispatch('dedupe_source_sql', 'dbt_merge')(plan, 'row_number' if one_per_key else 'rank')) }}
{% endmacro %}

{#- The rows of the staged SELECT that `rank_function` (rank or row_number) puts first per key. -#}
{% macro default__dedupe_source_sql(plan, rank_function) %}
  select {{ dbt_merge.column_list(plan.source_names) }}
  from (
    select *, {{ rank_function }}() over (
      partition by {{ dbt_merge.compared_list(plan.compare, plan.key_columns) }} {{ dbt_merge.dedup_order_clause(plan) }}
    ) as {{ dbt_merge.quote_identifier(plan.names.row) }}
    from {{ plan.stage }}
  ) as dbt_merge_numbered
  where {{ dbt_merge.quote_identifier(plan.names.row) }} = 1
{% endmacro %}

{# DuckDB filters window results in place with QUALIFY (no extra column to project away). #}
{% macro duckdb__dedupe_source_sql(plan, rank_function) %}
  select * from {{ plan.stage }}
  qualify {{ rank_function }}() over (
    partition by {{ dbt_merge.compared_list(plan.compare, plan.key_columns) }} {{ dbt_merge.dedup_order_clause(plan) }}
  ) = 1
{% endmacro %}

{#- The staged SELECT's distinct rows (deduplicate without dedup_order_by). -#}
{% macro default__distinct_rows_sql(plan) %}
  {{ return('select distinct * from ' ~ plan.stage) }}
{% endmacro %}

{# DuckDB: rows told apart byte for byte (compared_value): DISTINCT would fold rows that differ
   only in case under a collation. DISTINCT ON only when a column needs it. #}
{% macro duckdb__distinct_rows_sql(plan) %}
  {% if not plan.compare %}
    {{ return('select distinct * from ' ~ plan.stage) }}
  {% endif %}
  {{ return('select distinct on (' ~ dbt_merge.compared_list(plan.compare, plan.source_names) ~ ') * from ' ~ plan.stage) }}
{% endmacro %}
