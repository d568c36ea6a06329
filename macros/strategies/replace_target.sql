{#-
  full_merge written as one INSERT OVERWRITE of the whole table (choose_full_merge_write): the
  table becomes the merged rows, i.e. the target rows the merge leaves as they are (rows with a
  NULL key, rows outside incremental_predicates, matched rows unchanged or held back, and with
  soft deletes every row, soft-deleted where the merge deletes it) UNION ALL the rows it writes
  (inserted, updated). Those are the rows a MERGE INTO would leave; the statistics are the counts
  already made. `storage` is table_storage(plan.target).
-#}
{% macro replace_target(plan, counts, storage) %}
  {{ return(adapter.dispatch('replace_target', 'dbt_merge')(plan, counts, storage)) }}
{% endmacro %}

{% macro default__replace_target(plan, counts, storage) %}
  {{ dbt_merge.raise_merge_error("no whole-table overwrite for adapter '" ~ adapter.type() ~ "'.") }}
{% endmacro %}

{# Spark: Iceberg and Delta commit an INSERT OVERWRITE atomically (Iceberg: one snapshot), and
   Iceberg v2 tables may be overwritten by a query that reads them (parquet tables may not: see
   overwrite_partitions). Only unpartitioned tables: a partitioned one would need static
   partition overwrite mode (in dynamic mode it keeps the partitions the merged rows leave
   empty), a session setting that on a session shared by dbt threads could reach another merge's
   dynamic overwrite of a parquet table (set_session_conf); choose_full_merge_write writes a
   partitioned table by MERGE INTO.
   Unlike MERGE INTO, Iceberg's SQL INSERT OVERWRITE does not check for commits made since the
   snapshot it read: another writer's commit in between would be silently replaced. So the rows
   are read from the table's current snapshot by id, and the commit's parent must be that
   snapshot (_check_replaced_snapshot). #}
{% macro spark__replace_target(plan, counts, storage) %}
  {% set read = dbt_merge._current_snapshot(plan.target) if storage.provider == 'iceberg' else none %}
  {#- an unpartitioned table is overwritten whole in either partition overwrite mode, when at least
      one row is written (choose_full_merge_write merges a table the merge leaves empty) -#}
  {% if storage.partitioned %}
    {{ dbt_merge.raise_merge_error("internal: a whole-table overwrite of the partitioned table " ~ plan.target
        ~ " (choose_full_merge_write writes a partitioned table by MERGE INTO).") }}
  {% endif %}
  {% do dbt_merge.run_statement('insert overwrite table ' ~ plan.target ~ ' '
      ~ dbt_merge._merged_rows_sql(plan, counts, storage.columns, [], version=read), 'dbt_merge_overwrite') %}
  {% if storage.provider == 'iceberg' %}
    {% do dbt_merge._check_replaced_snapshot(plan.target, read) %}
  {% endif %}
{% endmacro %}

{#- The id (text) of an Iceberg table's current snapshot as this session sees it, or none before
    its first commit. -#}
{% macro _current_snapshot(relation) %}
  {#- text: the result's type inference may read the id as a number -#}
  {% set value = dbt_merge.run_sql('show tblproperties ' ~ relation ~ " ('current-snapshot-id')",
                                   'dbt_merge_describe').rows[0][1] | string %}
  {{ return(none if value in ['None', 'none'] or 'does not have property' in value else value) }}
{% endmacro %}

{#- After an INSERT OVERWRITE of an Iceberg table that read snapshot `read`: fail, naming the
    snapshots, when another commit came between (the commit's parent is not `read`), since the
    changes of that commit are then no longer in the table. -#}
{% macro _check_replaced_snapshot(relation, read) %}
  {% set written = dbt_merge._current_snapshot(relation) %}
  {% if written == read %}
    {{ dbt_merge.raise_merge_error("internal: the INSERT OVERWRITE of " ~ relation ~ " made no commit (the table "
        ~ "is still snapshot " ~ read ~ "), so the merge was not written. Set full_merge_write='merge' and run "
        ~ "this model again.") }}
  {% endif %}
  {% set rows = dbt_merge.run_sql('select parent_id from ' ~ relation ~ '.snapshots where snapshot_id = '
                                  ~ written, 'dbt_merge_describe').rows %}
  {% set parent = rows[0][0] if rows else none %}
  {% if (parent | string if parent is not none else none) != read %}
    {{ dbt_merge.raise_merge_error("another writer committed to " ~ relation ~ " while this run overwrote it: "
        ~ "the merged rows were read from snapshot " ~ read ~ ", but their commit (snapshot " ~ written
        ~ ") landed on top of snapshot " ~ parent ~ ", so what was committed after " ~ read
        ~ " is no longer in the table (Iceberg's INSERT OVERWRITE does not check for that, as MERGE INTO "
        ~ "does). Restore it: CALL <catalog>.system.rollback_to_snapshot('" ~ relation ~ "', " ~ parent
        ~ "), then run this model again. For a table that other jobs write at the same time, set "
        ~ "full_merge_write='merge': MERGE INTO fails on such a conflict and commits nothing.") }}
  {% endif %}
{% endmacro %}
