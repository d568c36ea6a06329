{#- Counts of the classified changes, before anything is written: {inserted, updated, deleted, unchanged}. -#}
{% macro count_changes(plan) %}
  {{ return(adapter.dispatch('count_changes', 'dbt_merge')(plan)) }}
{% endmacro %}

{% macro default__count_changes(plan) %}
  {% set row = dbt_merge.run_sql(
      "select
         coalesce(sum(case when dbt_merge_action = 'I' then 1 else 0 end), 0) as inserted,
         coalesce(sum(case when dbt_merge_action = 'U' then 1 else 0 end), 0) as updated,
         coalesce(sum(case when dbt_merge_action = 'D' then 1 else 0 end), 0) as deleted,
         coalesce(sum(case when dbt_merge_action = 'N' then 1 else 0 end), 0) as unchanged
       from " ~ plan.changes, 'dbt_merge_count').rows[0] %}
  {{ return({'inserted': row[0] | int, 'updated': row[1] | int, 'deleted': row[2] | int, 'unchanged': row[3] | int}) }}
{% endmacro %}

{# DuckDB: full_merge's deletes are not in the changes (see duckdb__classify_changes_sql); count
   the target rows missing from the source directly. #}
{% macro duckdb__count_changes(plan) %}
  {% set counts = dbt_merge.default__count_changes(plan) %}
  {% if plan.actions.target_only == 'delete' %}
    {% set deleted = dbt_merge.run_sql('select count(*) from ' ~ plan.target ~ ' as DBT_INTERNAL_DEST where '
        ~ dbt_merge._target_only_condition(plan), 'dbt_merge_count').rows[0][0] | int %}
    {% do counts.update({'deleted': deleted}) %}
  {% endif %}
  {{ return(counts) }}
{% endmacro %}
