{#-
  strategy='history': write the counted changes (classify_history_sql) to the table, once:
  close the current versions of the keys that change ('U', 'R', 'D': dbt_valid_to = the
  change's time), insert the new versions ('I', 'U', 'R': the SELECT's row, valid from the
  change's time, with its dbt_scd_id and dbt_updated_at) and, with hard_deletes='new_record',
  a deletion record per deleted key (its last version's values, dbt_is_deleted 'True', valid
  from the deletion). Nothing else of the table is touched.
    DuckDB: three statements in the model's transaction (one commit);
    Spark, tables with MERGE INTO (Iceberg, Delta): one MERGE, whose source holds each closing
      key once (matched: closed) and each new row once (not matched: inserted), one commit;
    Spark parquet, orc, Hive: the partitions holding closed or new versions rewritten
      (overwrite_partitions, as every strategy).
  A Parquet writer takes the same three sets: history_written_rows_sql (new versions and
  deletion records, as the table's columns) and history_closing_sql (keys and times to close).
-#}
{% macro apply_history(plan, stats) %}
  {% set c = stats.classes %}
  {% set writer = dbt_merge.target_writer() %}
  {% if c.I + c.U + c.R + c.D == 0 and (writer is none or not dbt_merge.schema_changes_any(plan.schema)) %}
    {{ return(none) }}
  {% endif %}
  {#- the schema change is made: the write reads the columns it added (history_deleted) -#}
  {% set plan = dbt_merge.copy_with(plan, {'history': dbt_merge.copy_with(plan.history, {'writing': true})}) %}
  {% if writer is not none %}
    {#- a target the front end writes (a Parquet dataset): the files holding a version that
        closes rewritten, the new versions and records written to new files, in one publish; a
        schema change with nothing to write is written by the writer too (an empty file) -#}
    {{ return(writer.apply_history(plan, stats, dbt_merge.writer_spec(plan))) }}
  {% endif %}
  {{ return(adapter.dispatch('apply_history', 'dbt_merge')(plan, stats)) }}
{% endmacro %}

{% macro default__apply_history(plan, stats) %}
  {% set c = stats.classes %}
  {% set h = plan.history %}
  {% set dst = 'DBT_INTERNAL_DEST' %}
  {% set q = dbt_merge.quote_identifier %}
  {% set columns = plan.write_names %}
  {#- the deletion records first, from the versions they end (read before those are closed) -#}
  {% if h.hard_deletes == 'new_record' and c.D > 0 %}
    {% do dbt_merge.run_statement('insert into ' ~ plan.target ~ ' (' ~ dbt_merge.column_list(columns) ~ ') '
        ~ dbt_merge._history_records_sql(plan, columns), 'dbt_merge_insert') %}
  {% endif %}
  {% if c.U + c.R + c.D > 0 %}
    {#- the deletion records just inserted are current too: a deleted key closes its live version only -#}
    {% do dbt_merge.run_statement('update ' ~ plan.target ~ ' as ' ~ dst ~ ' set ' ~ q(h.cols.dbt_valid_to)
        ~ ' = DBT_INTERNAL_SOURCE.' ~ q(plan.names.at) ~ ' from ' ~ plan.changes ~ ' as DBT_INTERNAL_SOURCE where '
        ~ dbt_merge.key_match(plan.key_columns, 'DBT_INTERNAL_SOURCE', dst, plan.compare) ~ ' and DBT_INTERNAL_SOURCE.'
        ~ q(plan.names.action) ~ " in ('U', 'R', 'D') and " ~ dbt_merge.target_rows_condition(plan, false) ~ ' and '
        ~ dbt_merge.history_current(plan, dst) ~ " and (DBT_INTERNAL_SOURCE." ~ q(plan.names.action) ~ " <> 'D' or not "
        ~ dbt_merge.history_deleted(plan, dst) ~ ")", 'dbt_merge_delete') %}
  {% endif %}
  {% if c.I + c.U + c.R > 0 %}
    {% set sourced = dbt_merge._history_sourced_columns(plan) %}
    {% do dbt_merge.run_statement('insert into ' ~ plan.target ~ ' (' ~ dbt_merge.column_list(sourced) ~ ') '
        ~ dbt_merge._history_versions_sql(plan, sourced), 'dbt_merge_insert') %}
  {% endif %}
{% endmacro %}

{#- The table's columns a new version fills: those the SELECT has, and the history columns. A
    column the SELECT lacks gets the table's default (NULL), as dbt snapshots leave it. -#}
{% macro _history_sourced_columns(plan) %}
  {% set meta = plan.history.meta | map(attribute='name') | map('lower') | list %}
  {% set columns = [] %}
  {% for col in plan.write_names if col | lower in meta or dbt_merge.find_column(col, plan.source_names) is not none %}
    {% do columns.append(col) %}
  {% endfor %}
  {{ return(columns) }}
{% endmacro %}

{#- SELECT of the new versions ('I', 'U', 'R') as `columns` (table columns; one the SELECT lacks
    is NULL): the SELECT's row, dbt_scd_id = md5(key | start), dbt_updated_at and dbt_valid_from
    its start, dbt_valid_to open (NULL or dbt_valid_to_current), dbt_is_deleted 'False'. -#}
{% macro _history_versions_sql(plan, columns) %}
  {%- set h = plan.history -%}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set chg = 'dbt_merge_changes' -%}
  {%- set q = dbt_merge.quote_identifier -%}
  {%- set at = chg ~ '.' ~ q(plan.names.at) -%}
  {%- set values = {'dbt_scd_id': dbt_merge.history_scd_id(plan, src ~ '.', at), 'dbt_updated_at': at,
                    'dbt_valid_from': at, 'dbt_valid_to': dbt_merge.history_open_end(plan),
                    'dbt_is_deleted': "cast('False' as " ~ dbt_merge.history_type('string') ~ ")"} -%}
  {%- if h.updated_at -%}
    {#- dbt_updated_at is the row's updated_at (dbt's timestamp strategy), also when it opens later -#}
    {%- do values.update({'dbt_updated_at': dbt_merge.history_time(plan, src ~ '.' ~ q(h.updated_at))}) -%}
  {%- endif -%}
  {%- set select_list = [] -%}
  {%- for col in columns -%}
    {%- set role = dbt_merge._history_role(plan, col) -%}
    {%- set found = dbt_merge.find_column(col, plan.source_names) -%}
    {%- set value = values[role] if role else (src ~ '.' ~ q(found) if found is not none else 'null') -%}
    {%- do select_list.append(value ~ ' as ' ~ q(col)) -%}
  {%- endfor -%}
  {{ return('select ' ~ select_list | join(', ') ~ ' from ' ~ (plan.deduped or plan.stage) ~ ' as ' ~ src
      ~ ' inner join ' ~ plan.changes ~ ' as ' ~ chg ~ ' on ' ~ dbt_merge.key_match(plan.key_columns, src, chg, plan.compare)
      ~ ' where ' ~ chg ~ '.' ~ q(plan.names.action) ~ " in ('I', 'U', 'R')") }}
{% endmacro %}

{#- SELECT of the deletion records (hard_deletes='new_record', 'D') as `columns`: the values of the
    version they follow, dbt_scd_id = md5(its dbt_scd_id | time), dbt_updated_at and
    dbt_valid_from the deletion's time, dbt_valid_to open, dbt_is_deleted 'True'. Reads the
    current versions: run it before they are closed (or in the same MERGE). -#}
{% macro _history_records_sql(plan, columns) %}
  {%- set h = plan.history -%}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set chg = 'dbt_merge_changes' -%}
  {%- set q = dbt_merge.quote_identifier -%}
  {%- set at = chg ~ '.' ~ q(plan.names.at) -%}
  {%- set values = {'dbt_scd_id': "md5(coalesce(cast(" ~ dst ~ "." ~ q(h.cols.dbt_scd_id) ~ " as string), '') || '|' || "
                                  ~ "coalesce(cast(" ~ at ~ " as string), ''))",
                    'dbt_updated_at': at, 'dbt_valid_from': at, 'dbt_valid_to': dbt_merge.history_open_end(plan),
                    'dbt_is_deleted': "cast('True' as " ~ dbt_merge.history_type('string') ~ ")"} -%}
  {%- set select_list = [] -%}
  {%- for col in columns -%}
    {%- set role = dbt_merge._history_role(plan, col) -%}
    {%- do select_list.append((values[role] if role else dst ~ '.' ~ q(col)) ~ ' as ' ~ q(col)) -%}
  {%- endfor -%}
  {{ return('select ' ~ select_list | join(', ') ~ ' from ' ~ plan.target ~ ' as ' ~ dst ~ ' inner join '
      ~ plan.changes ~ ' as ' ~ chg ~ ' on ' ~ dbt_merge.key_match(plan.key_columns, chg, dst, plan.compare) ~ ' where ' ~ chg ~ '.'
      ~ q(plan.names.action) ~ " = 'D' and " ~ dbt_merge.target_rows_condition(plan, false) ~ ' and '
      ~ dbt_merge.history_current(plan, dst) ~ ' and not ' ~ dbt_merge.history_deleted(plan, dst)) }}
{% endmacro %}

{#- The history role (dbt_valid_from, ...) of a table column, or none for a column of the data. -#}
{% macro _history_role(plan, col) %}
  {% for m in plan.history.meta if m.name | lower == col | lower %}
    {{ return(m.role) }}
  {% endfor %}
  {{ return(none) }}
{% endmacro %}

{#- The rows a history merge writes, as `columns`: new versions, then deletion records. -#}
{% macro history_written_rows_sql(plan, stats, columns) %}
  {% set parts = [] %}
  {% if stats.classes.I + stats.classes.U + stats.classes.R > 0 %}
    {% do parts.append(dbt_merge._history_versions_sql(plan, columns)) %}
  {% endif %}
  {% if plan.history.hard_deletes == 'new_record' and stats.classes.D > 0 %}
    {% do parts.append(dbt_merge._history_records_sql(plan, columns)) %}
  {% endif %}
  {{ return(parts | join(' union all ')) }}
{% endmacro %}

{#- SELECT of the keys whose current version closes, and when (the key columns, then the time
    as plan.names.at). -#}
{% macro history_closing_sql(plan) %}
  {% set q = dbt_merge.quote_identifier %}
  {{ return('select ' ~ dbt_merge.column_list(plan.key_columns) ~ ', ' ~ q(plan.names.at) ~ ' from ' ~ plan.changes
      ~ ' where ' ~ q(plan.names.action) ~ " in ('U', 'R', 'D')") }}
{% endmacro %}

{#- Spark: one MERGE INTO (Iceberg, Delta), or the partition rewrite of a parquet, orc or Hive
    table. The MERGE's source holds a closing row per key that closes ('C': matched to the
    key's current version, closed) and each row to insert ('W': never matched); it passes the
    snapshot guard, so a commit made after the counts fails the write (written into the run's
    branch instead on a table that does not validate a MERGE, publishes_on_branch). -#}
{% macro spark__apply_history(plan, stats) %}
  {% set altered = dbt_merge.schema_changes_any(plan.schema) %}
  {% set storage = plan.target_storage if plan.target_storage and not altered else dbt_merge.table_storage(plan.target) %}
  {% if storage.write == 'overwrite' %}
    {% do dbt_merge.overwrite_partitions(plan, stats, storage) %}
    {{ return(none) }}
  {% endif %}
  {% set h = plan.history %}
  {% set dst = 'DBT_INTERNAL_DEST' %}
  {% set src = 'DBT_INTERNAL_SOURCE' %}
  {% set q = dbt_merge.quote_identifier %}
  {% set columns = plan.write_names %}
  {% set kind = q(plan.names.action) %}
  {% set at = q(plan.names.at) %}
  {% set parts = [] %}
  {% set written = dbt_merge.history_written_rows_sql(plan, stats, columns) %}
  {% if written %}
    {% do parts.append('select ' ~ dbt_merge.column_list(columns) ~ ', cast(null as ' ~ h.time_type ~ ') as ' ~ at
        ~ ", 'W' as " ~ kind ~ ' from (' ~ written ~ ') as dbt_merge_written') %}
  {% endif %}
  {% if stats.classes.U + stats.classes.R + stats.classes.D > 0 %}
    {% set closing = [] %}
    {% for col in columns %}
      {% set key = dbt_merge.find_column(col, plan.key_columns) %}
      {% do closing.append((q(key) if key is not none else 'null') ~ ' as ' ~ q(col)) %}
    {% endfor %}
    {% do parts.append('select ' ~ closing | join(', ') ~ ', ' ~ at ~ ", 'C' as " ~ kind ~ ' from ('
        ~ dbt_merge.history_closing_sql(plan) ~ ') as dbt_merge_changes') %}
  {% endif %}
  {#- a table that does not validate a MERGE against other writers' appends: into the run's
      branch, published only while main is still the snapshot counted (publishes_on_branch) -#}
  {% set branch = dbt_merge.run_branch_name(plan) if dbt_merge.publishes_on_branch(plan, storage) else none %}
  {% set into = plan.target ~ '.branch_' ~ branch if branch else plan.target %}
  {% set guard = none if branch else dbt_merge.snapshot_guard_sql(plan) %}
  {% set rows = parts | join(' union all ') %}
  {% set sql = 'merge into ' ~ into ~ ' as ' ~ dst ~ ' using ('
      ~ ('select * from (' ~ rows ~ ') as ' ~ src ~ ' where ' ~ guard if guard else rows) ~ ') as ' ~ src
      ~ ' on ' ~ src ~ '.' ~ kind ~ " = 'C' and " ~ dbt_merge.key_match(plan.key_columns, src, dst, plan.compare) ~ ' and '
      ~ dbt_merge.target_rows_condition(plan, false) ~ ' and ' ~ dbt_merge.history_current(plan, dst)
      ~ ' when matched then update set ' ~ dst ~ '.' ~ q(h.cols.dbt_valid_to) ~ ' = ' ~ src ~ '.' ~ at
      ~ ' when not matched and ' ~ src ~ '.' ~ kind ~ " = 'W' then insert (" ~ dbt_merge.column_list(columns)
      ~ ') values (' ~ dbt_merge.column_list(columns, src) ~ ')' %}
  {% if branch %}
    {% do dbt_merge.write_on_branch(plan, plan.snapshot, branch, sql, 'MERGE') %}
  {% else %}
    {% do dbt_merge.run_statement(sql, 'dbt_merge_merge') %}
  {% endif %}
{% endmacro %}

{#- The new content of the partitions a history merge touches (of the whole table without
    partitions), as `columns`: the target's rows there, the closing versions with their
    dbt_valid_to set, then the rows written. Read before the target is touched (the work table of
    overwrite_partitions). -#}
{% macro history_merged_rows_sql(plan, stats, columns, partition_by) %}
  {%- set h = plan.history -%}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set chg = 'dbt_merge_changes' -%}
  {%- set q = dbt_merge.quote_identifier -%}
  {%- set closes = stats.classes.U + stats.classes.R + stats.classes.D > 0 -%}
  {%- set closing = dbt_merge.target_rows_condition(plan, false) ~ ' and ' ~ dbt_merge.history_current(plan, dst) -%}
  {%- set select_list = [] -%}
  {%- for col in columns -%}
    {%- if closes and col | lower == h.cols.dbt_valid_to | lower -%}
      {%- do select_list.append('case when ' ~ chg ~ '.' ~ q(plan.names.at) ~ ' is not null then ' ~ chg ~ '.'
            ~ q(plan.names.at) ~ ' else ' ~ dst ~ '.' ~ q(col) ~ ' end as ' ~ q(col)) -%}
    {%- else -%}
      {%- do select_list.append(dst ~ '.' ~ q(col)) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set kept = 'select ' ~ select_list | join(', ') ~ ' from ' ~ plan.target ~ ' as ' ~ dst -%}
  {%- if closes -%}
    {%- set kept = kept ~ ' left outer join (' ~ dbt_merge.history_closing_sql(plan) ~ ') as ' ~ chg ~ ' on '
          ~ dbt_merge.key_match(plan.key_columns, chg, dst, plan.compare) ~ ' and ' ~ closing -%}
  {%- endif -%}
  {%- set written = dbt_merge.history_written_rows_sql(plan, stats, columns) -%}
  {%- if partition_by -%}
    {%- set affected = [] -%}
    {%- if written -%}
      {%- do affected.append('select distinct ' ~ dbt_merge.column_list(partition_by) ~ ' from (' ~ written ~ ') as dbt_merge_written') -%}
    {%- endif -%}
    {%- if closes -%}
      {%- do affected.append('select distinct ' ~ dbt_merge.column_list(partition_by, dst) ~ ' from ' ~ plan.target ~ ' as '
            ~ dst ~ ' where ' ~ closing ~ ' and ' ~ dbt_merge.exists_match('(' ~ dbt_merge.history_closing_sql(plan) ~ ') as '
            ~ chg, plan.key_columns, dst, compare=plan.compare)) -%}
    {%- endif -%}
    {%- set kept = kept ~ ' left semi join (' ~ affected | join(' union ') ~ ') as dbt_merge_affected on '
          ~ dbt_merge.same_partition(partition_by, dst, 'dbt_merge_affected') -%}
  {%- endif -%}
  {{ return(kept ~ (' union all select ' ~ dbt_merge.column_list(columns) ~ ' from (' ~ written ~ ') as dbt_merge_written'
                    if written else '')) }}
{% endmacro %}

{#- `partition (...)` specs of the partitions a history merge empties: only a table partitioned by
    dbt_valid_to moves a version (the one it closes) to another partition. -#}
{% macro history_emptied_partitions(plan, stats, storage, work) %}
  {%- set h = plan.history -%}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- if not storage.partition_by or h.cols.dbt_valid_to | lower not in storage.partition_by | map('lower') | list
        or stats.classes.U + stats.classes.R + stats.classes.D == 0 -%}
    {{ return([]) }}
  {%- endif -%}
  {%- set closing = dbt_merge.target_rows_condition(plan, false) ~ ' and ' ~ dbt_merge.history_current(plan, dst)
        ~ ' and ' ~ dbt_merge.exists_match('(' ~ dbt_merge.history_closing_sql(plan) ~ ') as dbt_merge_changes',
                                           plan.key_columns, dst, compare=plan.compare) -%}
  {{ return(dbt_merge.partition_specs(plan, storage, work, closing)) }}
{% endmacro %}
