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

{#- MERGE INTO the target straight from the staged source, for plans that write source rows as they
    are (plan.writes_source_rows), with the narrow changes (classify_matched_keys_sql) counted.
    Clauses with nothing to do are left out. When rows are updated, the unchanged ones are left
    out of the source, so that files holding only unchanged rows are not rewritten; not for
    full_merge, where a target row must be matched to be kept (its unchanged rows are matched but
    not updated). Without an update clause the MERGE is an anti-join append (Spark plans an
    insert-only MERGE so) and needs no filter. Target rows with a NULL key or outside
    incremental_predicates are never deleted. -#}
{% macro merge_source_rows_sql(plan, counts) %}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set full = plan.actions.target_only == 'delete' -%}
  {%- set columns = dbt_merge._written_columns(plan) -%}
  merge into {{ plan.target }} as {{ dst }}
  using ({{ dbt_merge._source_rows_sql(plan, 'changed' if counts.unchanged > 0 and counts.updated > 0 and not full
                                         else none) }}) as {{ src }}
  on {{ dbt_merge.key_match(plan.key_columns, src, dst) }}
  {%- for predicate in plan.predicates %} and ({{ predicate }}){% endfor %}
  {%- if counts.updated > 0 %}
  when matched {%- if full and counts.unchanged > 0 %} and {{ dbt_merge._row_changed_condition(plan) }}{% endif %} then update set
    {%- for col in plan.update_columns %}
    {{ dst }}.{{ dbt_merge.quote_identifier(col) }} = {{ src }}.{{ dbt_merge.quote_identifier(col) }}{{ ',' if not loop.last }}
    {%- endfor %}
  {%- endif %}
  {%- if counts.inserted > 0 %}
  when not matched then insert ({{ dbt_merge.column_list(columns) }})
    values ({{ dbt_merge.column_list(columns, src) }})
  {%- endif %}
  {%- if counts.deleted > 0 %}
  when not matched by source and {{ dbt_merge._target_rows_condition(plan, false) }} then delete
  {%- endif %}
{% endmacro %}
