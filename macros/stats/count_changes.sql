{#- Counts of the classified changes, before anything is written: {inserted, updated, deleted, unchanged}. -#}
{% macro count_changes(plan) %}
  {% set row = dbt_merge.run_sql(
      "select
         coalesce(sum(case when dbt_merge_action = 'I' then 1 else 0 end), 0) as inserted,
         coalesce(sum(case when dbt_merge_action = 'U' then 1 else 0 end), 0) as updated,
         coalesce(sum(case when dbt_merge_action = 'D' then 1 else 0 end), 0) as deleted,
         coalesce(sum(case when dbt_merge_action = 'N' then 1 else 0 end), 0) as unchanged
       from " ~ plan.changes, 'dbt_merge_count').rows[0] %}
  {{ return({'inserted': row[0] | int, 'updated': row[1] | int, 'deleted': row[2] | int, 'unchanged': row[3] | int}) }}
{% endmacro %}
