{#-
  One grouped scan of the staged SELECT that answers every row-level check at once:
  NULLs per key column, and the keys that break uniqueness. For deduplicate, a key is bad when
  the rows it would choose from (all its rows, or those ranked first by dedup_order_by) are not
  all identical.
-#}
{% macro source_check_sql(plan) %}
  {{ return(adapter.dispatch('source_check_sql', 'dbt_merge')(plan)) }}
{% endmacro %}

{% macro default__source_check_sql(plan) %}
  {%- set keys = dbt_merge.column_list(plan.key_columns) -%}
  {%- set all_keys_present = [] -%}
  {%- for key in plan.key_columns -%}
    {%- do all_keys_present.append(dbt_merge.quote_identifier(key) ~ ' is not null') -%}
  {%- endfor -%}
  {%- set dedupe = plan.actions.dedupe -%}
  {%- set bad = 'dbt_merge_variants > 1' if dedupe else 'dbt_merge_rows > 1' -%}
  {%- set bad_key = '(' ~ all_keys_present | join(' and ') ~ ' and ' ~ bad ~ ')' -%}
  {%- set example_parts = [] -%}
  {%- for key in plan.key_columns -%}
    {%- do example_parts.append('cast(' ~ dbt_merge.quote_identifier(key) ~ ' as string)') -%}
  {%- endfor -%}
  with grouped as (
    select
      {{ keys }},
      count(*) as dbt_merge_rows
      {%- if dedupe %},
      count(distinct case when dbt_merge_rank = 1 then {{ dbt_merge.row_value(plan.source_names) }} end) as dbt_merge_variants
      {%- endif %}
    from (
      select *
        {%- if dedupe %},
        {% if plan.order_by -%}
        rank() over (partition by {{ keys }} {{ dbt_merge.dedup_order_clause(plan) }})
        {%- else -%} 1 {%- endif %} as dbt_merge_rank
        {%- endif %}
      from {{ plan.stage }}
    ) as dbt_merge_ranked
    group by {{ keys }}
  )
  select
    {%- for key in plan.key_columns %}
    coalesce(sum(case when {{ dbt_merge.quote_identifier(key) }} is null then dbt_merge_rows else 0 end), 0) as null_rows_{{ loop.index }},
    {%- endfor %}
    coalesce(sum(case when {{ bad_key }} then 1 else 0 end), 0) as bad_keys,
    min(case when {{ bad_key }} then concat_ws(', ', {{ example_parts | join(', ') }}) end) as bad_example
  from grouped
{% endmacro %}
