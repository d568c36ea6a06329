{#-
  Write the classified changes to a table without MERGE INTO (parquet, orc, Hive parquet/orc):
  rewrite the partitions they touch. `storage` is table_storage(plan.target).

  The partitions the merge touches ("affected") are those of the rows it writes (inserted rows,
  updated row images) and of the target rows it replaces or deletes. Their new content is
    the target rows of those partitions that stay (neither updated nor deleted)
    UNION ALL the rows written,
  which is materialized in a work table first: Spark refuses to overwrite a table that the same
  statement reads. The work table is a real parquet table in the target's schema, so every
  executor of a cluster reads it, named after the model and the invocation
  (<model>__dbt_merge_w_<invocation id>), marked as the package's (work_table_properties), and
  dropped at the end. Then, nothing of the target having been touched yet:
    1. the work table is marked complete (see finish_interrupted_write), with the partitions the
       merge leaves with no row (full_merge deleting all their rows, or updates moving rows to
       another partition): an INSERT OVERWRITE cannot empty a partition it writes no row to.
       These partitions hold only rows the merge removes;
    2. those partitions are dropped;
    3. INSERT OVERWRITE of the affected partitions from the work table, with dynamic partition
       overwrite, so that the other partitions are not touched. A table without partitions is
       rewritten whole.
  A run stopped anywhere after 1 is finished by the next one from the work table (steps 2 and 3
  again), so a row moved to another partition is never lost with its old partition.
  Not one commit: steps 2 and 3 are separate statements, and 3 swaps partitions one at a time
  (docs/how-it-works.md, "Atomicity"). The statistics are those already counted; nothing here changes them.
-#}
{% macro overwrite_partitions(plan, counts, storage) %}
  {{ return(adapter.dispatch('overwrite_partitions', 'dbt_merge')(plan, counts, storage)) }}
{% endmacro %}

{% macro default__overwrite_partitions(plan, counts, storage) %}
  {{ dbt_merge.raise_merge_error("no partition overwrite for adapter '" ~ adapter.type() ~ "'.") }}
{% endmacro %}

{% macro spark__overwrite_partitions(plan, counts, storage) %}
  {% set work = plan.target.incorporate(path={'identifier': plan.target.identifier ~ '__dbt_merge_w_'
                                                            ~ invocation_id | replace('-', '')}) %}
  {% do dbt_merge.run_statement('create table ' ~ work ~ ' using parquet '
      ~ dbt_merge.work_table_properties(plan.target) ~ ' as select '
      ~ dbt_merge.column_list(storage.columns) ~ ' from '
      ~ plan.target ~ ' where false', 'dbt_merge_work_table') %}
  {% if plan.writes_source_rows %}
    {#- the narrow changes are a view joining the source with the target (not materialized for
        MERGE INTO, which reads them at most once); the statements below read them up to five
        times, all before the target is written -#}
    {#- at most a row per source row (counted by the source check) when no target-only row is
        among them (full_merge's are) -#}
    {% set bound = none if plan.get('source_rows') is none or plan.actions.target_only != 'keep'
                   else (plan.source_rows | int) * ((storage.columns | length) + 1) * 8 %}
    {% do dbt_merge.cache_lazy(plan.changes, 'dbt_merge_work_table', bound) %}
  {% endif %}
  {#- INSERT, not CREATE TABLE AS: the rows written get the target's column types with INSERT's
      checks (as MERGE INTO would), e.g. a string that is not a number fails here, before the
      target is touched. -#}
  {#- a history merge (apply_history) closes versions in place and adds versions -#}
  {% do dbt_merge.run_statement('insert into ' ~ work ~ ' '
      ~ (dbt_merge.history_merged_rows_sql(plan, counts, storage.columns, storage.partition_by) if plan.history
         else dbt_merge.merged_rows_sql(plan, counts, storage.columns, storage.partition_by)), 'dbt_merge_work_rows') %}

  {% set emptied = dbt_merge.history_emptied_partitions(plan, counts, storage, work) if plan.history
                   else dbt_merge._emptied_partitions(plan, counts, storage, work) %}
  {% if plan.writes_source_rows %}
    {% do dbt_merge.run_statement('uncache table if exists ' ~ plan.changes, 'dbt_merge_work_table') %}
  {% endif %}
  {#- From here on the work table holds the only complete copy of the rows being rewritten: an
      interrupted run's next run finishes the write from it (finish_interrupted_write), the
      emptied partitions' drop included. -#}
  {% do dbt_merge.run_statement('alter table ' ~ work ~ " set tblproperties ('dbt_merge.ready' = "
      ~ dbt_merge.sql_string(run_started_at.isoformat()) ~ ", 'dbt_merge.emptied' = "
      ~ dbt_merge.sql_string(tojson(emptied)) ~ ")", 'dbt_merge_work_table') %}
  {% if emptied %}
    {% do dbt_merge.run_statement('alter table ' ~ plan.target ~ ' drop if exists ' ~ emptied | join(', '),
        'dbt_merge_drop_partitions') %}
  {% endif %}
  {% do dbt_merge.overwrite_from_work_table(plan.target, storage, work) %}
  {% do dbt_merge.run_statement('drop table if exists ' ~ work, 'dbt_merge_work_table') %}
{% endmacro %}

{#- INSERT OVERWRITE of the target's partitions that the work table has rows for (of the whole
    table when it has no partitions). -#}
{% macro overwrite_from_work_table(target, storage, work) %}
  {% set columns = dbt_merge.column_list(storage.columns) %}
  {% if storage.partition_by %}
    {#- Datasource tables overwrite every partition unless the mode is dynamic; Hive tables
        refuse dynamic partitions in strict mode when Spark does not convert the write. -#}
    {#- left set, never put back: keep_session_conf -#}
    {% do dbt_merge.keep_session_conf({'spark.sql.sources.partitionOverwriteMode': 'dynamic',
                                       'hive.exec.dynamic.partition.mode': 'nonstrict'}) %}
    {% do dbt_merge.run_statement('insert overwrite table ' ~ target ~ ' partition ('
        ~ dbt_merge.column_list(storage.partition_by) ~ ') select ' ~ columns ~ ' from ' ~ work,
        'dbt_merge_overwrite') %}
  {% else %}
    {% do dbt_merge.run_statement('insert overwrite table ' ~ target ~ ' select ' ~ columns ~ ' from ' ~ work,
        'dbt_merge_overwrite') %}
  {% endif %}
{% endmacro %}

{#- SELECT of the new content of the affected partitions (of the whole table when `partition_by` is
    empty): the target rows that stay, as they are or soft-deleted, then the rows written, as
    `columns` (the table's columns in its order). -#}
{% macro merged_rows_sql(plan, counts, columns, partition_by) %}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set target = plan.target -%}
  {%- set written = dbt_merge._written_rows_sql(plan, counts, columns) -%}
  {%- set removed = dbt_merge._removed_rows_condition(plan, counts) -%}
  {%- set kept = 'select ' ~ dbt_merge._kept_columns_sql(plan, counts, columns) ~ ' from ' ~ target ~ ' as ' ~ dst -%}
  {%- if partition_by -%}
    {%- set affected = 'select distinct ' ~ dbt_merge.column_list(partition_by)
          ~ ' from (' ~ written ~ ') as dbt_merge_written' -%}
    {%- if removed -%}
      {%- set affected = affected ~ ' union select distinct ' ~ dbt_merge.column_list(partition_by, dst)
            ~ ' from ' ~ target ~ ' as ' ~ dst ~ ' where ' ~ removed -%}
    {%- endif -%}
    {%- set kept = kept ~ ' left semi join (' ~ affected ~ ') as dbt_merge_affected on '
          ~ dbt_merge.same_partition(partition_by, dst, 'dbt_merge_affected') -%}
  {%- endif -%}
  {%- if removed -%}
    {%- set kept = kept ~ ' where not (' ~ removed ~ ')' -%}
  {%- endif -%}
  {{ return(kept ~ ' union all select ' ~ dbt_merge.column_list(columns) ~ ' from (' ~ written
      ~ ') as dbt_merge_written') }}
{% endmacro %}

{#- The select list of the target rows that stay (aliased DBT_INTERNAL_DEST), as `columns`: as they
    are, except that with soft deletes the rows the merge deletes get soft_delete_column true
    (and its timestamp column now), as the MERGE's soft-delete clause sets them. -#}
{% macro _kept_columns_sql(plan, counts, columns) %}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- if not plan.soft_delete or counts.deleted == 0 -%}
    {{ return(dbt_merge.column_list(columns, dst)) }}
  {%- endif -%}
  {#- live rows the merge considers that delete_condition deletes, and for full_merge those no
      source row matches (no changes row, or 'C') -#}
  {%- set deleted = dbt_merge.target_rows_condition(plan, false) ~ ' and ' ~ dbt_merge.live(plan) ~ ' and '
        ~ ('not ' ~ dbt_merge.in_changes(plan, ['U', 'N', 'H'], dst) if plan.actions.target_only == 'delete'
           else dbt_merge.in_changes(plan, ['C'], dst)) -%}
  {%- set flag = dbt_merge.find_column(plan.soft_delete.column, plan.target_names) | lower -%}
  {%- set stamp = (dbt_merge.find_column(plan.soft_delete.timestamp_column, plan.target_names) or '') | lower
        if plan.soft_delete.timestamp_column else none -%}
  {%- set select_list = [] -%}
  {%- for col in columns -%}
    {%- set q = dbt_merge.quote_identifier(col) -%}
    {%- if col | lower == flag -%}
      {%- do select_list.append('case when ' ~ deleted ~ ' then true else ' ~ dst ~ '.' ~ q ~ ' end as ' ~ q) -%}
    {%- elif col | lower == stamp -%}
      {%- do select_list.append('case when ' ~ deleted ~ ' then cast(current_timestamp as timestamp) else '
            ~ dst ~ '.' ~ q ~ ' end as ' ~ q) -%}
    {%- else -%}
      {%- do select_list.append(dst ~ '.' ~ q) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(select_list | join(', ')) }}
{% endmacro %}

{#- SELECT of the rows the merge writes (inserted rows and updated row images), as the table's
    columns; a column the source lacks is NULL (only `insert` writes such rows as they are). -#}
{% macro _written_rows_sql(plan, counts, columns) %}
  {%- set select_list = [] -%}
  {%- if plan.writes_source_rows -%}
    {%- set have = dbt_merge.written_columns(plan) -%}
    {%- set only = 'updated' if plan.actions.source_only != 'insert'
                   else ('changed' if counts.unchanged + (counts.held_back or 0) > 0 else none) -%}
    {%- set from = '(' ~ dbt_merge.source_rows_sql(plan, only) ~ ') as dbt_merge_source_rows' -%}
  {%- else -%}
    {%- set have = plan.target_names -%}
    {%- set from = plan.changes ~ ' as dbt_merge_changes where dbt_merge_changes.'
                   ~ dbt_merge.quote_identifier(plan.names.action) ~ " in ('I', 'U')" -%}
  {%- endif -%}
  {%- for col in columns -%}
    {%- set found = dbt_merge.find_column(col, have) -%}
    {%- do select_list.append((dbt_merge.quote_identifier(found) if found is not none else 'null')
          ~ ' as ' ~ dbt_merge.quote_identifier(col)) -%}
  {%- endfor -%}
  {{ return('select ' ~ select_list | join(', ') ~ ' from ' ~ from) }}
{% endmacro %}

{#- Condition on the target, aliased DBT_INTERNAL_DEST, of the rows the merge replaces (updated) or
    deletes, or none when there are none. With soft deletes only the updated rows are replaced
    (a deleted row stays, soft-deleted: _kept_columns_sql). Always true or false, never NULL (a
    NULL incremental predicate counts as false, as in the MERGE's ON clause), so that
    `not (...)` keeps every other row. -#}
{% macro _removed_rows_condition(plan, counts) %}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- if counts.updated + (0 if plan.soft_delete else counts.deleted) == 0 -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set matched = dbt_merge.replaced_rows_match(plan, counts, dst) -%}
  {%- set parts = [] -%}
  {%- for key in plan.key_columns -%}
    {%- do parts.append(dst ~ '.' ~ dbt_merge.quote_identifier(key) ~ ' is not null') -%}
  {%- endfor -%}
  {%- for predicate in plan.predicates -%}
    {%- do parts.append('coalesce((' ~ predicate ~ '), false)') -%}
  {%- endfor -%}
  {%- if matched -%}
    {%- do parts.append(matched) -%}
  {%- endif -%}
  {{ return(parts | join(' and ')) }}
{% endmacro %}

{#- `partition (p1 = 'v', p2 = null), ...` for each partition whose rows are all removed and that
    receives no row: the target's partitions of removed rows that the work table lacks. Only
    deletes, and updates of a partition column, can empty a partition. -#}
{% macro _emptied_partitions(plan, counts, storage, work) %}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set partitions = storage.partition_by -%}
  {%- set moves = partitions | map('lower') | select('in', plan.update_columns | map('lower') | list) | list -%}
  {%- set removed = dbt_merge._removed_rows_condition(plan, counts) -%}
  {%- if not partitions or not removed or not (counts.deleted > 0 or (counts.updated > 0 and moves)) -%}
    {{ return([]) }}
  {%- endif -%}
  {{ return(dbt_merge.partition_specs(plan, storage, work, removed)) }}
{% endmacro %}

{#- `partition (...)` specs of the target's partitions that hold a row aliased DBT_INTERNAL_DEST
    where `removed` and that the work table has no row for. -#}
{% macro partition_specs(plan, storage, work, removed) %}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set partitions = storage.partition_by -%}
  {%- set values = [] -%}
  {%- for col in partitions -%}
    {%- do values.append('cast(' ~ dst ~ '.' ~ dbt_merge.quote_identifier(col) ~ ' as string)') -%}
  {%- endfor -%}
  {%- set rows = dbt_merge.run_sql('select distinct ' ~ values | join(', ') ~ ' from ' ~ plan.target ~ ' as ' ~ dst
        ~ ' where ' ~ removed ~ ' and not ' ~ dbt_merge.exists_match(work, partitions, dst, op='<=>'),
        'dbt_merge_emptied').rows -%}
  {%- set specs = [] -%}
  {%- for row in rows -%}
    {%- set parts = [] -%}
    {%- for col in partitions -%}
      {%- set value = row[loop.index0] -%}
      {%- do parts.append(dbt_merge.quote_identifier(col) ~ ' = ' ~ ('null' if value is none else
            "'" ~ (value | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'")) -%}
    {%- endfor -%}
    {%- do specs.append('partition (' ~ parts | join(', ') ~ ')') -%}
  {%- endfor -%}
  {{ return(specs) }}
{% endmacro %}

{#- `a.p1 <=> b.p1 and ...`: the same partition (NULL is a partition value too). -#}
{% macro same_partition(partitions, left, right) %}
  {%- set parts = [] -%}
  {%- for col in partitions -%}
    {%- set q = dbt_merge.quote_identifier(col) -%}
    {%- do parts.append(left ~ '.' ~ q ~ ' <=> ' ~ right ~ '.' ~ q) -%}
  {%- endfor -%}
  {{ return(parts | join(' and ')) }}
{% endmacro %}
