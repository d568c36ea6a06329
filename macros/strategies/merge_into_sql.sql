{#- MERGE INTO the target from the classified changes (ANSI form, as Spark, Iceberg and Delta take it). -#}
{% macro merge_into_sql(plan) %}
  {{ return(adapter.dispatch('merge_into_sql', 'dbt_merge')(plan)) }}
{% endmacro %}

{% macro default__merge_into_sql(plan) %}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  merge into {{ plan.target }} as {{ dst }}
  using (
    select * from {{ plan.changes }} where dbt_merge_action in ('I', 'U', 'D')
  ) as {{ src }}
  on {{ dbt_merge.key_match(plan.key_columns, src, dst) }}
  {%- for predicate in plan.predicates %} and ({{ predicate }}){% endfor %}
  {%- if plan.actions.target_only == 'delete' %}
  when matched and {{ src }}.dbt_merge_action = 'D' then delete
  {%- endif %}
  {%- if plan.update_columns %}
  when matched and {{ src }}.dbt_merge_action = 'U' then update set
    {%- for col in plan.update_columns %}
    {{ dst }}.{{ dbt_merge.quote_identifier(col) }} = {{ src }}.{{ dbt_merge.quote_identifier(col) }}{{ ',' if not loop.last }}
    {%- endfor %}
  {%- endif %}
  {%- if plan.actions.source_only == 'insert' %}
  when not matched and {{ src }}.dbt_merge_action = 'I' then insert ({{ dbt_merge.column_list(plan.target_names) }})
    values ({{ dbt_merge.column_list(plan.target_names, src) }})
  {%- endif %}
{% endmacro %}
