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
   dynamic overwrite of a parquet table (keep_session_conf); choose_full_merge_write writes a
   partitioned table by MERGE INTO.
   Unlike MERGE INTO, Iceberg's SQL INSERT OVERWRITE does not check for commits made since the
   snapshot it read: another writer's commit in between would be silently replaced. So the
   statement fails before it commits when the table is no longer the snapshot the merge counted
   (plan.snapshot, counted_snapshot) as it runs (snapshot_guard_sql), which makes the rows it
   reads (the table as it is, with its columns now) that snapshot's, and the commit's parent must
   be that snapshot: a commit that lands while
   the overwrite runs is caught only afterwards (_check_replaced_snapshot), since Spark SQL cannot
   pass Iceberg the write options (isolation-level, validate-from-snapshot-id) that would make
   the overwrite's own commit check for it. #}
{% macro spark__replace_target(plan, counts, storage) %}
  {% set read = plan.get('snapshot') if storage.provider == 'iceberg' else none %}
  {#- Iceberg: guarded on the counted snapshot, or, counted on a table with no commit yet, on it
      still having none (a commit another writer made since would be read and kept uncounted) -#}
  {% set guard = dbt_merge._snapshot_is_sql(plan.target, read, dbt_merge._concurrent_commit_message(plan))
                 if storage.provider == 'iceberg' else none %}
  {#- an unpartitioned table is overwritten whole in either partition overwrite mode, when at least
      one row is written (choose_full_merge_write merges a table the merge leaves empty) -#}
  {% if storage.partitioned %}
    {{ dbt_merge.raise_merge_error("internal: a whole-table overwrite of the partitioned table " ~ plan.target
        ~ " (choose_full_merge_write writes a partitioned table by MERGE INTO).") }}
  {% endif %}
  {#- the table's rows as it is now, with its columns now (read by version, the counted snapshot
      has that snapshot's columns: a column dropped and added again since would read the dropped
      one's values, and one added since would be missing); the guard makes them the counted
      snapshot's rows, since the statement fails unless main is still that snapshot -#}
  {% set rows = dbt_merge._merged_rows_sql(plan, counts, storage.columns, []) %}
  {% if guard %}
    {% set rows = 'select * from (' ~ rows ~ ') as dbt_merge_rows where ' ~ guard %}
  {% endif %}
  {% do dbt_merge.run_statement('insert overwrite table ' ~ plan.target ~ ' ' ~ rows, 'dbt_merge_overwrite') %}
  {% if storage.provider == 'iceberg' %}
    {% set schema = plan.schema %}
    {% do dbt_merge._check_replaced_snapshot(plan.target, read,
        restorable=not dbt_merge.schema_changes_any(schema)) %}
  {% endif %}
{% endmacro %}

{#- After an INSERT OVERWRITE of an Iceberg table that read snapshot `read`: when another commit
    came between (the commit's parent is not `read`), the changes of that commit are no longer in
    the table. Then, if `restorable` (this run changed no column), put the rows of that parent
    back with one more INSERT OVERWRITE, guarded like the write (it fails if yet another commit
    lands on top of ours), and fail saying that nothing of this run remains and a retry is safe;
    otherwise, or if that fails, fail naming the snapshot to roll back to. -#}
{% macro _check_replaced_snapshot(relation, read, restorable=false) %}
  {#- the commit updates the table object the statement wrote through, which the session's cache
      holds, unless another thread of the session reloaded the table (its refresh table) before
      the commit landed: that older table still reads as snapshot `read` (red team: three threads
      overwriting one table got a false "made no commit" for writes that landed). Then the table
      as committed: reloaded, it may also show commits made after this one -#}
  {% set written = dbt_merge._current_snapshot(relation) %}
  {% if written == read %}
    {% do dbt_merge.reload_table(relation) %}
    {% set written = dbt_merge._current_snapshot(relation) %}
    {% if written != read and dbt_merge._parent_snapshot(relation, written) != read %}
      {#- commits on top of `read`, one of them this run's: which came first cannot be told, so
          nothing is put back (that could undo a later writer's commit) -#}
      {{ dbt_merge.raise_merge_error("the INSERT OVERWRITE of " ~ relation ~ " committed, but the session's "
          ~ "cached table did not show its commit, and reloaded the table is snapshot " ~ written ~ ", more than "
          ~ "one commit after snapshot " ~ read ~ " the merge read: another writer also committed, and whether "
          ~ "before this run's commit (its changes then replaced) or after cannot be told. Look at the table's "
          ~ "history (select * from " ~ relation ~ ".history), and roll back to " ~ read ~ " if another "
          ~ "writer's commit came first. For a table that other jobs write at the same time, set "
          ~ "full_merge_write='merge': MERGE INTO fails on such a conflict and commits nothing.") }}
    {% endif %}
  {% endif %}
  {% if written == read %}
    {{ dbt_merge.raise_merge_error("internal: the INSERT OVERWRITE of " ~ relation ~ " made no commit (the table "
        ~ "is still snapshot " ~ read ~ "), so the merge was not written. Set full_merge_write='merge' and run "
        ~ "this model again.") }}
  {% endif %}
  {% set parent = dbt_merge._parent_snapshot(relation, written) %}
  {% if parent == read %}
    {{ return(none) }}
  {% endif %}
  {% set what = "another writer committed to " ~ relation ~ " while this run overwrote it: the merged rows were "
      ~ "read from snapshot " ~ read ~ ", but their commit (snapshot " ~ written ~ ") landed on top of snapshot "
      ~ parent ~ " (Iceberg's INSERT OVERWRITE does not check for that, as MERGE INTO does)" %}
  {% set rollback = what ~ ", so what was committed after " ~ read ~ " is no longer in the table. Restore it: "
      ~ "CALL <catalog>.system.rollback_to_snapshot('" ~ relation ~ "', " ~ parent ~ "), then run this model "
      ~ "again. For a table that other jobs write at the same time, set full_merge_write='merge': MERGE INTO "
      ~ "fails on such a conflict and commits nothing." %}
  {% if restorable and parent is not none %}
    {% do dbt_merge.run_statement('insert overwrite table ' ~ relation ~ ' select * from ' ~ relation
        ~ ' version as of ' ~ parent ~ ' where ' ~ dbt_merge._snapshot_is_sql(relation, written,
        dbt_merge.merge_error_prefix() ~ rollback), 'dbt_merge_overwrite') %}
    {% set restored = dbt_merge._current_snapshot(relation) %}
    {% if restored != written and dbt_merge._parent_snapshot(relation, restored) == written %}
      {{ dbt_merge.raise_merge_error(what ~ ". The table has been given back the rows of snapshot " ~ parent
          ~ " (as snapshot " ~ restored ~ "), so nothing of this run remains in it. Running the model again "
          ~ "is safe: it counts the table as it is then. For a table that other jobs write at the same time, "
          ~ "set full_merge_write='merge': MERGE INTO fails on such a conflict and commits nothing.") }}
    {% endif %}
  {% endif %}
  {{ dbt_merge.raise_merge_error(rollback) }}
{% endmacro %}

{#- The parent (text) of snapshot `snapshot` of an Iceberg table, or none. -#}
{% macro _parent_snapshot(relation, snapshot) %}
  {% set rows = dbt_merge.run_sql('select parent_id from ' ~ relation ~ '.snapshots where snapshot_id = '
                                  ~ snapshot, 'dbt_merge_describe').rows %}
  {{ return(rows[0][0] | string if rows and rows[0][0] is not none else none) }}
{% endmacro %}
