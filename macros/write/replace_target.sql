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
   snapshot it read: another writer's commit in between would be silently replaced (Spark SQL
   cannot pass Iceberg the write options, isolation-level and validate-from-snapshot-id, that
   would make the commit check for it). So the statement fails before it commits when the table
   is no longer the snapshot the merge counted (plan.snapshot, counted_snapshot) as it runs
   (snapshot_guard_sql), which makes the rows it reads (the table as it is, with its columns
   now) that snapshot's, and it writes into the run's branch made at that snapshot, published
   only if main is still that snapshot (_overwrite_on_branch): a commit that lands while the
   overwrite runs refuses the run, nothing published. #}
{% macro spark__replace_target(plan, counts, storage) %}
  {% set read = plan.get('snapshot') if storage.provider == 'iceberg' else none %}
  {#- Iceberg: guarded on the counted snapshot, or, counted on a table with no commit yet, on it
      still having none (a commit another writer made since would be read and kept uncounted) -#}
  {% set guard = dbt_merge.snapshot_is_sql(plan.target, read, dbt_merge.concurrent_commit_message(plan))
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
  {% set rows = dbt_merge.merged_rows_sql(plan, counts, storage.columns, []) %}
  {% if guard %}
    {% set rows = 'select * from (' ~ rows ~ ') as dbt_merge_rows where ' ~ guard %}
  {% endif %}
  {#- (a session staging the table's writes, write-audit-publish, never gets here:
      choose_full_merge_write writes by MERGE INTO then). Branches need Iceberg's SQL
      extensions (or the Python door's in-process branches); without them the overwrite is
      committed in place and checked after (_check_replaced_snapshot) -#}
  {% if read is not none and dbt_merge.branches_available(plan) %}
    {#- Iceberg with a snapshot: into the run's branch, published only onto that snapshot -#}
    {% do dbt_merge._overwrite_on_branch(plan, rows, read) %}
    {{ return(none) }}
  {% endif %}
  {% do dbt_merge.run_statement('insert overwrite table ' ~ plan.target ~ ' ' ~ rows, 'dbt_merge_overwrite') %}
  {% if storage.provider == 'iceberg' %}
    {% do dbt_merge._check_replaced_snapshot(plan.target, read) %}
  {% endif %}
{% endmacro %}

{#- The overwrite of an Iceberg table counted on snapshot `read`, written into a branch of the
    run made at `read` and published by fast-forwarding main to it (write_on_branch): Iceberg's
    INSERT OVERWRITE does not check for commits made since the snapshot it read, but its
    fast-forward refuses, atomically, a main that is no longer an ancestor of the branch, and the
    run refuses a main that is not `read` any more. So the commit published is exactly the run's
    (the branch's one commit on `read`), and another writer's commit before or while the
    overwrite ran refuses the run with nothing published (red team helper-41: read from the
    session's cached table, which another thread had moved on, a later writer's commit was taken
    for the run's and undone, and the run said none of its rows remained while all of them did). -#}
{% macro _overwrite_on_branch(plan, rows, read) %}
  {% set branch = dbt_merge.run_branch_name(plan) %}
  {% do dbt_merge.write_on_branch(plan, read, branch, 'insert overwrite table ' ~ plan.target ~ '.branch_' ~ branch
                                   ~ ' ' ~ rows, 'INSERT OVERWRITE') %}
{% endmacro %}

{#- After an INSERT OVERWRITE of an Iceberg table without the run's branch (a table that had no
    commit yet, `read` none, or a session without Iceberg's SQL extensions; the branch path is
    _overwrite_on_branch): the commit must sit on
    `read`. The session's cached table shows the commit unless another thread of the session
    reloaded the table before it landed (red team: a false "made no commit" for writes that
    landed); then the table reloaded. When more than one commit follows `read`, which one is the
    run's cannot be told (no mark on a SQL commit), so nothing is put back, which could undo a
    later writer's commit (red team helper-41): the run fails saying what to check. -#}
{% macro _check_replaced_snapshot(relation, read) %}
  {% set written = dbt_merge.current_snapshot(relation) %}
  {% if written == read %}
    {% do dbt_merge.reload_table(relation) %}
    {% set written = dbt_merge.current_snapshot(relation) %}
  {% endif %}
  {% if written == read %}
    {{ dbt_merge.raise_merge_error("internal: the INSERT OVERWRITE of " ~ relation ~ " made no commit (the table "
        ~ "is still " ~ ("without a snapshot" if read is none else "snapshot " ~ read) ~ "), so the merge was not "
        ~ "written. Set full_merge_write='merge' and run this model again.") }}
  {% endif %}
  {% if dbt_merge._parent_snapshot(relation, written) != read %}
    {{ dbt_merge.raise_merge_error("the INSERT OVERWRITE of " ~ relation ~ " committed, but the table is now snapshot "
        ~ written ~ ", more than one commit after " ~ ("the table's first commit" if read is none else "snapshot " ~ read)
        ~ " the merge read: another writer also committed, and whether before this run's commit (its changes then "
        ~ "replaced) or after cannot be told. Look at the table's history (select * from " ~ relation ~ ".history), "
        ~ "and if another writer's commit came first, restore it (rollback_to_snapshot) and run this model again. "
        ~ "For a table that other jobs write at the same time, set full_merge_write='merge': MERGE INTO fails on "
        ~ "such a conflict and commits nothing.") }}
  {% endif %}
{% endmacro %}

{#- The parent (text) of snapshot `snapshot` of an Iceberg table, or none. -#}
{% macro _parent_snapshot(relation, snapshot) %}
  {% set rows = dbt_merge.run_sql('select parent_id from ' ~ relation ~ '.snapshots where snapshot_id = '
                                  ~ snapshot, 'dbt_merge_describe').rows %}
  {{ return(rows[0][0] | string if rows and rows[0][0] is not none else none) }}
{% endmacro %}
