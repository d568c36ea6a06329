{#-
  The merge plan as rows: every source row (and, for full_merge, every target row missing from
  the source) with the row image to write and its action:
    'I' insert, 'U' update, 'D' delete (a target row the source lacks), 'C' delete by
    delete_condition, 'N' matched and left as it is, 'K' (soft deletes) matched by a row
    delete_condition deletes, but soft-deleted already: left as it is (counted unchanged),
    'H' matched, changed, but held back by merge_update_condition, 'X' nothing (a source row with delete_condition true whose key the
    target lacks, or with soft deletes a target row already soft-deleted).
  Engines write from this one relation, and the statistics are counted from it.
-#}
{% macro classify_changes_sql(plan) %}
  {{ return(adapter.dispatch('classify_changes_sql', 'dbt_merge')(plan)) }}
{% endmacro %}

{% macro default__classify_changes_sql(plan) %}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set first_key = dbt_merge.quote_identifier(plan.key_columns[0]) -%}
  {%- set in_source = src ~ '.' ~ first_key ~ ' is not null' -%}
  {%- set in_target = dst ~ '.' ~ first_key ~ ' is not null' -%}
  {%- set update_lower = plan.update_columns | map('lower') | list -%}
  {%- set key_lower = plan.key_columns | map('lower') | list -%}
  select
    {%- for col in plan.target_names %}
    {%- set q = dbt_merge.quote_identifier(col) %}
    {%- set source_col = dbt_merge.find_column(col, plan.source_names) %}
    {%- if col | lower in key_lower %}
    coalesce({{ src }}.{{ dbt_merge.quote_identifier(source_col) }}, {{ dst }}.{{ q }}) as {{ q }},
    {%- elif source_col is none %}
    {{ dst }}.{{ q }} as {{ q }},
    {%- elif col | lower in update_lower %}
    {{ src }}.{{ dbt_merge.quote_identifier(source_col) }} as {{ q }},
    {%- else %}
    case when {{ in_target }} then {{ dbt_merge.dest_value(plan, col) }} else {{ src }}.{{ dbt_merge.quote_identifier(source_col) }} end as {{ q }},
    {%- endif %}
    {%- endfor %}
    case
      when not ({{ in_target }}) then
        {{- " case when " ~ dbt_merge.delete_flag(plan) ~ " then 'X' else 'I' end" if plan.delete_condition else " 'I'" }}
      when not ({{ in_source }}) then
        {{- " case when " ~ dbt_merge.live(plan) ~ " then 'D' else 'X' end" if plan.soft_delete else " 'D'" }}
      else {{ dbt_merge.matched_action_sql(plan) }}
    end as {{ dbt_merge.quote_identifier(plan.names.action) }}
    {{- dbt_merge._origin_column(plan) }}
  from {{ plan.deduped or plan.stage }} as {{ src }}
  {{ plan.join_type }} join (
    {#- Target rows with a NULL key (made outside the package) can match no source row: they
        stay out of the merge, so full_merge neither deletes nor re-inserts them. #}
    select * from {{ plan.scope or plan.target }} as {{ dst }} where {{ dbt_merge.target_rows_condition(plan, false) }}
    {{- dbt_merge.target_key_bounds(plan, dst) if plan.join_type != 'full outer' }}
  ) as {{ dst }}
    on {{ dbt_merge.key_match(plan.key_columns, src, dst, plan.compare) }}
{% endmacro %}

{#-
  The narrow form of the changes, for plans that write source rows as they are
  (plan.writes_source_rows): one row per matched key, with the key columns and the action,
  'U' (some update column differs) or 'N' (all equal, or the strategy leaves matched rows alone).
  Only the matched target rows are compared, and only on the update columns (on none for
  `insert`, which then reads just the target's keys).
  Source-only rows are listed only with every_source_row (a left join, DuckDB): 'I' when the
  strategy inserts them, 'X' otherwise (or when delete_condition is true for them). Then each
  source row is listed once per target row of its key (once when there is none), so the counts
  need no count(distinct) and the insert can pick the few rows to write (see count_source_keys).
-#}
{% macro classify_matched_keys_sql(plan, every_source_row=false) %}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set action = dbt_merge.matched_action_sql(plan) -%}
  {%- if every_source_row -%}
    {%- set insert_flag = 'true' if plan.actions.source_only == 'insert' else 'false' -%}
    {%- if plan.delete_condition and plan.actions.source_only == 'insert' -%}
      {%- set insert_flag = 'not ' ~ dbt_merge.delete_flag(plan) -%}
    {%- endif -%}
    {%- set action = 'case when ' ~ dst ~ '.' ~ dbt_merge.quote_identifier(plan.key_columns[0]) ~ ' is null then '
          ~ ("'I'" if insert_flag == 'true' else ("'X'" if insert_flag == 'false'
             else "case when " ~ insert_flag ~ " then 'I' else 'X' end"))
          ~ ' else ' ~ action ~ ' end' -%}
  {%- endif %}
  select
    {%- for key in plan.key_columns %}
    {{ src }}.{{ dbt_merge.quote_identifier(key) }},
    {%- endfor %}
    {{ action }} as {{ dbt_merge.quote_identifier(plan.names.action) }}
    {{- dbt_merge._origin_column(plan) }}
  from {{ plan.deduped or plan.stage }} as {{ src }}
  {{ 'left outer' if every_source_row else 'inner' }} join (
    select * from {{ plan.scope or plan.target }} as {{ dst }} where {{ dbt_merge.target_rows_condition(plan, false) }}
    {{- dbt_merge.target_key_bounds(plan, dst) if plan.join_type != 'full outer' }}
  ) as {{ dst }}
    on {{ dbt_merge.key_match(plan.key_columns, src, dst, plan.compare) }}
{% endmacro %}

{#- `, DBT_INTERNAL_DEST.<origin>`: where a target row is stored, when the writer of the target
    asked for it (scope_target: plan.scope, plan.origin), else nothing. -#}
{% macro _origin_column(plan) %}
  {%- if plan.origin -%}
    {%- set q = dbt_merge.quote_identifier(plan.origin) -%}
    {{ return(',\n    DBT_INTERNAL_DEST.' ~ q ~ ' as ' ~ q) }}
  {%- endif -%}
  {{ return('') }}
{% endmacro %}

{#- The action of a matched (source row, target row) pair: 'C', 'K', 'U', 'H' or 'N' (see above). -#}
{% macro matched_action_sql(plan) %}
  {%- set parts = ['case'] -%}
  {%- if plan.delete_condition -%}
    {%- do parts.append('when ' ~ dbt_merge.delete_flag(plan) ~ ' then '
          ~ ("case when " ~ dbt_merge.live(plan) ~ " then 'C' else 'K' end" if plan.soft_delete else "'C'")) -%}
  {%- endif -%}
  {%- if plan.update_columns -%}
    {%- do parts.append('when ' ~ dbt_merge.row_changed_condition(plan) ~ ' then '
          ~ ("case when " ~ dbt_merge.update_allowed(plan) ~ " then 'U' else 'H' end" if plan.update_condition else "'U'")) -%}
  {%- endif -%}
  {%- if parts | length == 1 -%}
    {{ return("'N'") }}
  {%- endif -%}
  {%- do parts.append("else 'N' end") -%}
  {{ return(parts | join(' ')) }}
{% endmacro %}

{#- delete_condition on the source row aliased DBT_INTERNAL_SOURCE (NULL counts as false). -#}
{% macro delete_flag(plan) %}
  {{ return('coalesce((' ~ plan.delete_condition ~ '), false)') }}
{% endmacro %}

{#- merge_update_condition on a matched pair (NULL counts as false: the row is held back). -#}
{% macro update_allowed(plan) %}
  {{ return('coalesce((' ~ plan.update_condition ~ '), false)') }}
{% endmacro %}

{#- With soft deletes: the target row aliased DBT_INTERNAL_DEST is not soft-deleted (NULL: live).
    Read as the planned schema change leaves it: a column being added is NULL for every row. -#}
{% macro live(plan) %}
  {{ return('not coalesce(' ~ dbt_merge.dest_value(plan,
      dbt_merge.find_column(plan.soft_delete.column, plan.target_names)) ~ ', false)') }}
{% endmacro %}

{#- True when a matched source row differs from its target row in a column that marks a change
    (merge_check_columns, by default the update columns; NULL-safe; byte for byte, see
    compared_value); always with detect_unchanged=false. -#}
{% macro row_changed_condition(plan) %}
  {%- if not plan.detect_unchanged -%}
    {{ return('(1 = 1)') }}
  {%- endif -%}
  {%- set parts = [] -%}
  {%- for col in plan.check_columns -%}
    {%- set source_col = dbt_merge.find_column(col, plan.source_names) -%}
    {%- do parts.append(dbt_merge.changed_condition(
          dbt_merge.compared_value(plan.compare, source_col, 'DBT_INTERNAL_SOURCE.' ~ dbt_merge.quote_identifier(source_col)),
          dbt_merge.compared_value(plan.compare, source_col, dbt_merge.dest_value(plan, col)))) -%}
  {%- endfor -%}
  {{ return('(' ~ parts | join(' or ') ~ ')') }}
{% endmacro %}

{#- A target column's value on a row aliased DBT_INTERNAL_DEST, as the planned schema change
    (applied just before the write) will leave it: NULL in a column being added, converted in a
    column being retyped; the same before and after the ALTER. -#}
{% macro dest_value(plan, col) %}
  {%- set schema = plan.schema -%}
  {%- if schema is not none -%}
    {%- for added in schema.added if added.name | lower == col | lower -%}
      {{ return('null') }}
    {%- endfor -%}
    {%- for r in schema.retyped if r.column.name | lower == col | lower -%}
      {{ return('cast(DBT_INTERNAL_DEST.' ~ dbt_merge.quote_identifier(r.column.name) ~ ' as ' ~ r.new_type ~ ')') }}
    {%- endfor -%}
  {%- endif -%}
  {{ return('DBT_INTERNAL_DEST.' ~ dbt_merge.quote_identifier(col)) }}
{% endmacro %}

{# DuckDB: when the merge writes source rows as they are (the usual case), the changes are the
   narrow form, keys and actions (classify_matched_keys_sql): writing every source row's image into
   the changes table cost more than the merge's own writes (10M-row target, 1M-row source, idle
   machine: 0.42 s of a 1.12 s upsert; the narrow form 0.17-0.20 s), and the writes then read the
   staged source directly (see duckdb__apply_changes). When the SELECT is at least half the size
   of the table, every source row is listed, matched or not, so that the counts need no
   count(distinct) and the insert can semi-join on the few rows to write (a 10M-row snapshot, 1%
   changed: count 1.29 s and insert 0.94 s with the matched keys only).
   Otherwise (merge_update_columns, or target columns the SELECT lacks), full_merge leaves the
   target rows missing from the source ('D') out of the changes: a full outer join reads every
   column of every target row and writes them all to the changes table (measured 9 s); instead
   count_changes counts them (target rows minus matched rows) and apply_changes deletes them with
   an anti-join on the key; both read only the key columns (see target_rows_condition). #}
{% macro duckdb__classify_changes_sql(plan) %}
  {% if plan.writes_source_rows %}
    {#- every_source_row: decided by the flow before the classify -#}
    {{ return(dbt_merge.classify_matched_keys_sql(plan, every_source_row=plan.every_source_row)) }}
  {% elif plan.actions.target_only == 'delete' %}
    {{ return(dbt_merge.default__classify_changes_sql(dbt_merge.copy_with(plan, {'join_type': 'left outer'}))) }}
  {% endif %}
  {{ return(dbt_merge.default__classify_changes_sql(plan)) }}
{% endmacro %}

{#- WHERE condition, on the target aliased DBT_INTERNAL_DEST, of the target rows the merge
    considers (key not NULL, within the incremental predicates) and, with missing_from_source,
    only those whose key is not in the source: the rows the full outer join classifies 'D'. -#}
{% macro target_rows_condition(plan, missing_from_source) %}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set parts = [] -%}
  {%- for key in plan.key_columns -%}
    {%- do parts.append(dst ~ '.' ~ dbt_merge.quote_identifier(key) ~ ' is not null') -%}
  {%- endfor -%}
  {%- for predicate in plan.predicates -%}
    {%- do parts.append('(' ~ predicate ~ ')') -%}
  {%- endfor -%}
  {%- if missing_from_source -%}
    {%- do parts.append('not ' ~ dbt_merge.exists_match(plan.deduped or plan.stage, plan.key_columns, dst, compare=plan.compare)) -%}
  {%- endif -%}
  {{ return(parts | join(' and ')) }}
{% endmacro %}

{# Spark: the narrow changes when the merge writes source rows as they are (see
   merge_source_rows_sql): joining the target once for the statistics, then once in the MERGE,
   measured 12.4 s against 15.4 s for the row images (2M-row Iceberg target, 200k-row source). #}
{% macro spark__classify_changes_sql(plan) %}
  {{ return(dbt_merge.classify_matched_keys_sql(plan) if plan.writes_source_rows
            else dbt_merge.default__classify_changes_sql(plan)) }}
{% endmacro %}
