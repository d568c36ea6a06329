{#- Counts of the classified changes, before anything is written: {inserted, updated, deleted,
    unchanged, total}, held_back (with merge_update_condition), plus, for check_merge_counts,
    matched_rows and matched_keys (fewer keys than rows when the target already holds a key
    twice) and, when the strategy deletes, considered (the target rows the merge considers; with
    soft deletes, those not soft-deleted yet). total is the target's row count after the merge:
    its count now (cheap before any write: DuckDB answers it from metadata, 0.002 s for 10M rows
    against 0.04 s once the transaction has changed the table) plus inserted minus the rows
    deleted (soft-deleted rows stay in the table). -#}
{% macro count_changes(plan) %}
  {{ return(adapter.dispatch('count_changes', 'dbt_merge')(plan)) }}
{% endmacro %}

{#- Narrow changes (plan.writes_source_rows) are counted by count_matched_keys. From the wide
    changes: on DuckDB full_merge's target rows missing from the source are not in them (see
    duckdb__classify_changes_sql); they are the target rows the merge considers minus the
    matched ones (each one 'U', 'N', 'H' or 'C' row), which reads only the target's key columns
    (an anti-join count measured 2.9 s for a 10M-row target). -#}
{% macro default__count_changes(plan) %}
  {% if plan.writes_source_rows %}
    {{ return(dbt_merge.count_matched_keys(plan)) }}
  {% endif %}
  {% set action = dbt_merge.quote_identifier(plan.names.action) %}
  {% set row = dbt_merge.run_sql(
      "select " ~ dbt_merge.action_sums(plan, ['I', 'U', 'N', 'H', 'C', 'K']) ~ ",
         " ~ dbt_merge.distinct_keys_sql(plan, action ~ " in ('U', 'N', 'H', 'C', 'K')") ~ " as matched_keys,
         " ~ dbt_merge.target_rows_sql(plan) ~ " as target_rows"
      ~ dbt_merge._considered_columns(plan)
      ~ " from " ~ plan.changes, 'dbt_merge_count').rows[0] %}
  {{ return(dbt_merge._counts(plan, {'inserted': row[0] | int, 'updated': row[1] | int,
      'unchanged': (row[2] | int) + (row[5] | int), 'held_back': row[3] | int, 'condition_deletes': row[4] | int,
      'matched_keys': row[6] | int, 'target_rows': row[7] | int, 'considered': row[8] | int if row | length > 8 else 0,
      'unmatched': row[9] | int if row | length > 9 else none})) }}
{% endmacro %}

{#- Counts from the narrow changes (classify_matched_keys_sql), in one query: its rows are the
    matched target rows; inserted are the source rows (less those delete_condition drops) whose
    key matched none (when the strategy inserts); deleted are the target rows the merge
    considers that no source row matched (when it deletes), and those delete_condition deletes. -#}
{% macro count_matched_keys(plan) %}
  {% set action = dbt_merge.quote_identifier(plan.names.action) %}
  {% set row = dbt_merge.run_sql(
      "select " ~ dbt_merge.action_sums(plan, ['U', 'N', 'H', 'C', 'K']) ~ ",
         " ~ dbt_merge.distinct_keys_sql(plan) ~ " as matched_keys,
         (select count(*) from " ~ (plan.deduped or plan.stage) ~ " as DBT_INTERNAL_SOURCE"
            ~ (" where not " ~ dbt_merge.delete_flag(plan) if plan.delete_condition else "") ~ ") as source_rows,
         " ~ dbt_merge.target_rows_sql(plan) ~ " as target_rows"
      ~ dbt_merge._considered_columns(plan)
      ~ " from " ~ plan.changes, 'dbt_merge_count').rows[0] %}
  {{ return(dbt_merge.matched_key_counts(plan, row)) }}
{% endmacro %}

{#- The statistics from a count_matched_keys row (spark__count_changes returns the same columns):
    updated, unchanged, held_back, condition_deletes, kept deleted ('K'), matched_keys,
    source_rows, target_rows [, considered[, unmatched]]; inserted are the source rows whose key
    matched none: source_rows counts no row delete_condition deletes, so neither do the matched
    ones taken from it ('C' and 'K' rows; a 'K' counted as 'N' gave -1 inserted, found by the
    soft-delete suite's long profile). -#}
{% macro matched_key_counts(plan, row) %}
  {% set matched = (row[0] | int) + (row[1] | int) + (row[2] | int) %}
  {{ return(dbt_merge._counts(plan, {
    'inserted': (row[6] | int) - matched if plan.actions.source_only == 'insert' else 0,
    'updated': row[0] | int, 'unchanged': (row[1] | int) + (row[4] | int), 'held_back': row[2] | int,
    'condition_deletes': row[3] | int, 'matched_keys': row[5] | int, 'target_rows': row[7] | int,
    'considered': row[8] | int if row | length > 8 else 0,
    'unmatched': none if row | length < 10 else row[9] | int})) }}
{% endmacro %}

{#- DuckDB: counts from the changes of every source row (classify_matched_keys_sql with
    every_source_row), in one scan and without count(distinct): a source row without a target
    row of its key ('I' or 'X') is listed once, a matched one once per target row of its key, and
    the source's keys are unique (checked before), so the matched keys are the source rows less
    the unmatched ones. On a 10M-row snapshot the count(distinct) of count_matched_keys took
    1.3 s of a 6.8 s upsert. -#}
{% macro count_source_keys(plan) %}
  {% set row = dbt_merge.run_sql(
      "select " ~ dbt_merge.action_sums(plan, ['U', 'N', 'H', 'C', 'I', 'X', 'K']) ~ ",
         (select count(*) from " ~ (plan.deduped or plan.stage) ~ ") as source_rows,
         " ~ dbt_merge.target_rows_sql(plan) ~ " as target_rows"
      ~ dbt_merge._considered_columns(plan)
      ~ " from " ~ plan.changes, 'dbt_merge_count').rows[0] %}
  {% set unmatched_source = (row[4] | int) + (row[5] | int) %}
  {{ return(dbt_merge._counts(plan, {
    'inserted': row[4] | int, 'updated': row[0] | int, 'unchanged': (row[1] | int) + (row[6] | int),
    'held_back': row[2] | int, 'condition_deletes': row[3] | int, 'matched_keys': (row[7] | int) - unmatched_source,
    'target_rows': row[8] | int, 'considered': row[9] | int if row | length > 9 else 0,
    'unmatched': none if row | length < 11 else row[10] | int})) }}
{% endmacro %}

{#- DuckDB: see count_source_keys. -#}
{% macro duckdb__count_changes(plan) %}
  {{ return(dbt_merge.count_source_keys(plan) if plan.writes_source_rows and plan.every_source_row
            else dbt_merge.default__count_changes(plan)) }}
{% endmacro %}

{#- `coalesce(sum(case when <action> = 'U' then 1 else 0 end), 0) as updated, ...`: how many
    rows of the changes have each of `actions`, in that order. The aliases are names the
    differential's hostile column names include (cases.INTERNAL_NAMES), 'K' one of them too. -#}
{% macro action_sums(plan, actions) %}
  {%- set names = {'I': 'inserted', 'U': 'updated', 'N': 'unchanged', 'H': 'held_back', 'C': 'condition_deletes',
                   'K': 'dbt_merge_count',
                   'X': 'nothing'} -%}
  {%- set action = dbt_merge.quote_identifier(plan.names.action) -%}
  {%- set parts = [] -%}
  {%- for a in actions -%}
    {%- do parts.append("coalesce(sum(case when " ~ action ~ " = '" ~ a ~ "' then 1 else 0 end), 0) as " ~ names[a]) -%}
  {%- endfor -%}
  {{ return(parts | join(', ')) }}
{% endmacro %}

{#- The statistics from the raw counts above. `unmatched` (target rows the merge considers that
    no source row matched: full_merge deletes them) is counted directly with soft deletes, and
    derived otherwise: considered rows minus the matched ones. -#}
{% macro _counts(plan, raw) %}
  {% set deletes = plan.actions.target_only == 'delete' %}
  {% set matched_rows = raw.updated + raw.unchanged + raw.held_back + raw.condition_deletes %}
  {% set unmatched = 0 %}
  {% if deletes %}
    {% set unmatched = raw.unmatched if plan.soft_delete else raw.considered - matched_rows %}
  {% endif %}
  {% set counts = {'inserted': raw.inserted, 'updated': raw.updated, 'deleted': unmatched + raw.condition_deletes,
                   'unchanged': raw.unchanged, 'matched_rows': matched_rows, 'matched_keys': raw.matched_keys,
                   'unmatched': unmatched, 'condition_deletes': raw.condition_deletes,
                   'considered': raw.considered} %}
  {% if plan.update_condition %}
    {% do counts.update({'held_back': raw.held_back}) %}
  {% endif %}
  {% do counts.update({'total': raw.target_rows + counts.inserted - (0 if plan.soft_delete else counts.deleted)}) %}
  {{ return(counts) }}
{% endmacro %}

{#- `, considered[, unmatched]` for the count query when the strategy deletes: the target rows the
    merge considers (with soft deletes only live ones), and with soft deletes, the live ones no
    source row matches (counted, since matched rows may be soft-deleted ones coming back). -#}
{% macro _considered_columns(plan) %}
  {% if plan.actions.target_only != 'delete' %}
    {{ return('') }}
  {% endif %}
  {% set live = ' and ' ~ dbt_merge.live(plan) if plan.soft_delete else '' %}
  {% set sql = ", (select count(*) from " ~ plan.target ~ " as DBT_INTERNAL_DEST where "
      ~ dbt_merge.target_rows_condition(plan, false) ~ live ~ ") as considered" %}
  {% if plan.soft_delete %}
    {% set sql = sql ~ ", (select count(*) from " ~ plan.target ~ " as DBT_INTERNAL_DEST where "
        ~ dbt_merge.target_rows_condition(plan, true) ~ live ~ ") as unmatched" %}
  {% endif %}
  {{ return(sql) }}
{% endmacro %}

{#- One value per key of a changes row, for count(distinct ...): the key column, or a row of them
    (byte for byte, see compared_value). -#}
{% macro key_value(plan) %}
  {{ return(dbt_merge.compared_list(plan.compare, plan.key_columns) if plan.key_columns | length == 1
            else dbt_merge.row_value(plan.key_columns, plan.compare)) }}
{% endmacro %}

{#- How many distinct keys the rows have (only those where `condition`, when given): count(distinct),
    or the set bits of a bitmap over the key's range when the source check measured one
    (plan.key_bounds, DuckDB: see measure_source). Keys compared are the source's, so within it. -#}
{% macro distinct_keys_sql(plan, condition=none) %}
  {%- set value = dbt_merge.key_value(plan) -%}
  {%- if condition -%}
    {%- set value = 'case when ' ~ condition ~ ' then ' ~ value ~ ' end' -%}
  {%- endif -%}
  {%- if plan.key_bounds -%}
    {{ return('coalesce(bit_count(bitstring_agg(' ~ value ~ ', ' ~ plan.key_bounds[0] ~ ', ' ~ plan.key_bounds[1] ~ ')), 0)') }}
  {%- endif -%}
  {{ return('count(distinct ' ~ value ~ ')') }}
{% endmacro %}
