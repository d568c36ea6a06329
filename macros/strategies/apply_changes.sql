{#- Write the classified changes (plan.changes) to the target. `counts` lets engines skip no-op statements. -#}
{% macro apply_changes(plan, counts) %}
  {{ return(adapter.dispatch('apply_changes', 'dbt_merge')(plan, counts)) }}
{% endmacro %}

{#- Delete the rows being replaced or removed, then insert the new row images, in the model's
    transaction. On DuckDB 2.0 this measured faster than MERGE INTO (see BENCHMARKS.md). -#}
{% macro default__apply_changes(plan, counts) %}
  {% if counts.updated + counts.deleted > 0 %}
    {% do dbt_merge.run_sql(
        'delete from ' ~ plan.target ~ ' where exists (select 1 from ' ~ plan.changes ~ ' as dbt_merge_changes'
        ~ " where dbt_merge_changes.dbt_merge_action in ('U', 'D') and "
        ~ dbt_merge.key_match(plan.key_columns, 'dbt_merge_changes', dbt_merge.quote_identifier(plan.target.identifier)) ~ ')',
        'dbt_merge_delete') %}
  {% endif %}
  {% if counts.inserted + counts.updated > 0 %}
    {% set columns = dbt_merge.column_list(plan.target_names) %}
    {% do dbt_merge.run_sql(
        'insert into ' ~ plan.target ~ ' (' ~ columns ~ ') select ' ~ columns ~ ' from ' ~ plan.changes
        ~ " where dbt_merge_action in ('I', 'U')", 'dbt_merge_insert') %}
  {% endif %}
{% endmacro %}

{#- DuckDB: full_merge's target rows missing from the source are not in the changes (see
    duckdb__classify_changes_sql): delete them by an anti-join on the key, then apply the rest. -#}
{% macro duckdb__apply_changes(plan, counts) %}
  {% if plan.writes_source_rows %}
    {% if counts.updated + counts.deleted > 0 %}
      {% do dbt_merge.run_sql('delete from ' ~ plan.target ~ ' as DBT_INTERNAL_DEST where '
          ~ dbt_merge._replaced_target_rows_condition(plan, counts), 'dbt_merge_delete') %}
    {% endif %}
    {% if counts.inserted + counts.updated > 0 %}
      {% do dbt_merge.run_sql(dbt_merge._insert_source_rows_sql(plan, counts), 'dbt_merge_insert') %}
    {% endif %}
    {{ return(none) }}
  {% endif %}
  {% if plan.actions.target_only == 'delete' and counts.deleted > 0 %}
    {% do dbt_merge.run_sql('delete from ' ~ plan.target ~ ' as DBT_INTERNAL_DEST where '
        ~ dbt_merge._target_rows_condition(plan, true), 'dbt_merge_delete') %}
  {% endif %}
  {% do dbt_merge.default__apply_changes(plan, {'inserted': counts.inserted, 'updated': counts.updated, 'deleted': 0}) %}
{% endmacro %}

{#- Spark: one MERGE INTO, which Iceberg and Delta commit atomically as one snapshot. Rows left
    unchanged are not in its source (except for full_merge, where they must match to be kept), so
    files holding only unchanged rows are not rewritten. -#}
{% macro spark__apply_changes(plan, counts) %}
  {% if counts.inserted + counts.updated + counts.deleted > 0 %}
    {% do dbt_merge.run_sql(dbt_merge.merge_source_rows_sql(plan, counts) if plan.writes_source_rows
                            else dbt_merge.merge_into_sql(plan), 'dbt_merge_merge') %}
  {% endif %}
{% endmacro %}

{#- With the narrow changes (plan.writes_source_rows): WHERE condition on the target, aliased
    DBT_INTERNAL_DEST, of the rows to delete: the updated ones, and for full_merge every target
    row the merge considers except the unchanged ones. -#}
{% macro _replaced_target_rows_condition(plan, counts) %}
  {%- if plan.actions.target_only != 'delete' -%}
    {{ return(dbt_merge._in_changes(plan, 'U', 'DBT_INTERNAL_DEST')) }}
  {%- endif -%}
  {%- set condition = dbt_merge._target_rows_condition(plan, false) -%}
  {%- if counts.unchanged > 0 -%}
    {%- set condition = condition ~ ' and not ' ~ dbt_merge._in_changes(plan, 'N', 'DBT_INTERNAL_DEST') -%}
  {%- endif -%}
  {{ return(condition) }}
{% endmacro %}

{#- With the narrow changes: SELECT of the staged source rows, as the target's columns that the
    source has (named as in the target), aliased DBT_INTERNAL_SOURCE. `only`:
      none         every source row
      'changed'    all but the unchanged ones ('I' and 'U')
      'updated'    only the 'U' ones -#}
{% macro _source_rows_sql(plan, only=none) %}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set select_list = [] -%}
  {%- for col in dbt_merge._written_columns(plan) -%}
    {%- do select_list.append(src ~ '.' ~ dbt_merge.quote_identifier(dbt_merge._find_column(col, plan.source_names))
          ~ ' as ' ~ dbt_merge.quote_identifier(col)) -%}
  {%- endfor -%}
  {%- set sql = 'select ' ~ select_list | join(', ') ~ ' from ' ~ (plan.deduped or plan.stage) ~ ' as ' ~ src -%}
  {%- if only == 'updated' -%}
    {%- set sql = sql ~ ' where ' ~ dbt_merge._in_changes(plan, 'U', src) -%}
  {%- elif only == 'changed' -%}
    {%- set sql = sql ~ ' where not ' ~ dbt_merge._in_changes(plan, 'N', src) -%}
  {%- endif -%}
  {{ return(sql) }}
{% endmacro %}

{#- `exists (...)`: the row aliased `alias` has a key the narrow changes list with `action`. -#}
{% macro _in_changes(plan, action, alias) %}
  {{ return('exists (select 1 from ' ~ plan.changes ~ ' as dbt_merge_changes where dbt_merge_changes.dbt_merge_action = '
      ~ "'" ~ action ~ "' and " ~ dbt_merge.key_match(plan.key_columns, 'dbt_merge_changes', alias) ~ ')') }}
{% endmacro %}

{#- The target's columns that the source has: those a source row fills. -#}
{% macro _written_columns(plan) %}
  {%- set columns = [] -%}
  {%- for col in plan.target_names -%}
    {%- if dbt_merge._find_column(col, plan.source_names) is not none -%}
      {%- do columns.append(col) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(columns) }}
{% endmacro %}

{#- INSERT of the source rows to write ('I' and 'U') into the target. -#}
{% macro _insert_source_rows_sql(plan, counts) %}
  {{ return('insert into ' ~ plan.target ~ ' (' ~ dbt_merge.column_list(dbt_merge._written_columns(plan)) ~ ') '
      ~ dbt_merge._source_rows_sql(plan, 'updated' if plan.actions.source_only != 'insert'
                                   else ('changed' if counts.unchanged > 0 else none))) }}
{% endmacro %}
