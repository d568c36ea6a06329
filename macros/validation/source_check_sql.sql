{#-
  One query that answers every row-level check at once: NULLs per key column, and the keys that
  break uniqueness, with one example. Columns: null_rows_1..n, bad_keys, bad_example, and for
  deduplicate tied_keys (keys whose first rows are identical repeats: fine, one is kept).
  Without deduplicate it is one grouped scan of the staged SELECT. With deduplicate it reads the
  candidate rows (dedupe_source_sql): a key is bad when more than one distinct row is left.
-#}
{% macro source_check_sql(plan) %}
  {{ return(adapter.dispatch('source_check_sql', 'dbt_merge')(plan)) }}
{% endmacro %}

{% macro default__source_check_sql(plan) %}
  {%- set keys = dbt_merge.column_list(plan.key_columns) -%}
  {%- if plan.actions.dedupe -%}
  with dbt_merge_repeated as (
    select {{ keys }} from {{ plan.deduped }} group by {{ keys }} having count(*) > 1
  ),
  grouped as (
    select {{ keys }}, count(distinct {{ dbt_merge.row_value(plan.source_names) }}) as dbt_merge_variants
    from {{ plan.deduped }} as dbt_merge_rows
    where exists (select 1 from dbt_merge_repeated
                  where {{ dbt_merge.key_match(plan.key_columns, 'dbt_merge_repeated', 'dbt_merge_rows') }})
    group by {{ keys }}
  )
  select
    {%- for key in plan.key_columns %}
    (select count(*) from {{ plan.stage }} where {{ dbt_merge.quote_identifier(key) }} is null) as null_rows_{{ loop.index }},
    {%- endfor %}
    {{ dbt_merge._bad_key_columns(plan, 'dbt_merge_variants > 1') }},
    coalesce(sum(case when dbt_merge_variants = 1 then 1 else 0 end), 0) as tied_keys
  from grouped
  {%- else -%}
  with grouped as (
    select {{ keys }}, count(*) as dbt_merge_rows
    from {{ plan.stage }}
    group by {{ keys }}
  )
  select
    {%- for key in plan.key_columns %}
    coalesce(sum(case when {{ dbt_merge.quote_identifier(key) }} is null then dbt_merge_rows else 0 end), 0) as null_rows_{{ loop.index }},
    {%- endfor %}
    {{ dbt_merge._bad_key_columns(plan, dbt_merge._all_keys_present(plan) ~ ' and dbt_merge_rows > 1') }}
  from grouped
  {%- endif %}
{% endmacro %}

{#- `bad_keys, bad_example` over the grouped keys, for a condition that marks a bad key. -#}
{% macro _bad_key_columns(plan, bad) %}
  {%- set example_parts = [] -%}
  {%- for key in plan.key_columns -%}
    {%- do example_parts.append('cast(' ~ dbt_merge.quote_identifier(key) ~ ' as string)') -%}
  {%- endfor -%}
  {{ return('coalesce(sum(case when ' ~ bad ~ ' then 1 else 0 end), 0) as bad_keys, '
      ~ 'min(case when ' ~ bad ~ ' then concat_ws(\', \', ' ~ example_parts | join(', ') ~ ') end) as bad_example') }}
{% endmacro %}

{% macro _all_keys_present(plan) %}
  {%- set parts = [] -%}
  {%- for key in plan.key_columns -%}
    {%- do parts.append(dbt_merge.quote_identifier(key) ~ ' is not null') -%}
  {%- endfor -%}
  {{ return('(' ~ parts | join(' and ') ~ ')') }}
{% endmacro %}
