{#-
  The merge flow, shared by every front end: the `merge` materialization (dbt) and the Python
  doors (dbt_merge.spark.merge_dataframe), which render this macro in a stand-in for dbt's
  context. Phases: stage and check the SELECT (nothing written yet) -> plan the schema change ->
  build, or classify, count and check the counts -> write -> drop the work relations -> history.
  Where a table's commits say what a merge did (Spark: Iceberg merge-on-read and format v3,
  merge_on_branch), the merge writes once into a branch and is counted from that commit instead
  of classified and counted before.
  strategy='history' keeps every version of a row (SCD type 2, dbt snapshots' semantics): after
  the same stage and source check, its checks of the table, classes, counts and write are its own
  (history_target_totals, classify_history_sql, count_history, check_history_target, apply_history).
  Returns the statistics ({inserted, updated, deleted, unchanged, total[, held_back][, versions]
  [, dry_run]} or {skipped: reason}); for history, total is the current versions and versions
  every row of the table.

  cfg       validate_merge_config()'s result
  target    the table to merge into; existing: the relation found there (none on a first run)
  rebuild   build the target from the SELECT (first run, a view there, or a full refresh)
  sql       the SELECT (the source)
  contract_enforced  check the SELECT's columns against the model's contract (dbt only)
-#}
{% macro run_merge(cfg, target, existing, rebuild, sql, contract_enforced=false) %}
  {#-- a view the SELECT reads that the engine may read at an old definition: refused first, or
       on Spark, where it can, as soon as the SELECT is staged, from the plan read then --#}
  {% set views_with_stage = not rebuild and dbt_merge.views_checked_with_stage(cfg, existing) %}
  {% if not views_with_stage %}
    {% do dbt_merge.check_upstream_views(sql, cfg, existing if not rebuild else none) %}
  {% endif %}
  {#-- merge_history_table: a table the row can be appended to (Spark writes it after the commit) --#}
  {% if cfg.history_table %}
    {#- a dry run too: it says what the run would refuse -#}
    {% do dbt_merge.check_history_table(cfg.history_table, target) %}
  {% endif %}
  {#-- the SELECT's columns against an enforced contract, on every run: before anything is
       made (dbt's own error would leave the work relations behind) --#}
  {% if contract_enforced %}
    {% do get_assert_columns_equivalent(sql) %}
  {% endif %}
  {%- set relations = dbt_merge.work_relations(target, cfg) -%}
  {%- set started_at = modules.datetime.datetime.utcnow() -%}

  {#-- stage the SELECT once. A first
       build or full refresh on an engine that rolls the build back on failure loads the table
       straight from the SELECT (a view, read once) and checks the rows it loaded --#}
  {%- set check_after_build = rebuild and dbt_merge.check_after_rebuild(cfg) -%}
  {% if rebuild %}
    {#-- a build reads the SELECT in one CREATE TABLE AS, which takes any SELECT --#}
    {% do dbt_merge.create_work_relation(relations.stage, sql, materialize=not check_after_build) %}
    {% set staged, staged_copy = {'copy': none, 'bytes': none, 'session': none, 'columns': none}, none %}
  {% else %}
    {% set staged = dbt_merge.stage_select(relations.stage, sql, materialize=true, target=existing,
                                           views=cfg if views_with_stage else none) %}
    {% set staged_copy = staged['copy'] %}
  {% endif %}
  {#- as the staged view's plan says them exactly (stage_select), else `describe table` -#}
  {% set source_columns = staged.get('columns') or dbt_merge.work_relation_columns(relations.stage) %}
  {#- two names equal but for case: one taken for the other by every phase -#}
  {% do dbt_merge.check_column_names(source_columns) %}

  {#-- plan: the schema change (made only just before the write) and the columns to compare --#}
  {% set schema = none %}
  {% if not rebuild %}
    {#- reloaded and read after the SELECT is staged (not with how it is stored, read before the
        hooks): a commit another writer made meanwhile is the state the run counts and writes
        (red team helper-56: read once before, such a commit refused the run, or failed it with
        Spark's raw error when it changed a column) -#}
    {% do dbt_merge.reload_table(existing) %}
    {#- its columns, and on Spark an Iceberg table's properties, in one read -#}
    {% set described = dbt_merge.described_target(existing) %}
    {% set target_columns = described.columns %}
    {% set target_names = target_columns | map(attribute='name') | list %}
    {#- the soft-delete columns the SELECT lacks are columns it brings (build_merge_plan adds
        them): added to a table without them, kept as they are in a table with them -#}
    {% set brought = source_columns | list %}
    {% for extra in dbt_merge.soft_delete_extras(cfg, source_columns | map(attribute='name') | list, target_columns) %}
      {% set kept = dbt_merge.column_named(extra.column.name, target_columns) %}
      {% do brought.append(kept if kept is not none else extra.column) %}
    {% endfor %}
    {#- a history table's own columns (dbt_valid_from, ...) are brought too: kept as they are -#}
    {% if cfg.history %}
      {% for m in dbt_merge.history_columns(cfg, source_columns, target_columns) %}
        {% do brought.append(m.column) %}
      {% endfor %}
    {% endif %}
    {#- two of the table's names equal but for case, one of which the run writes or reads -#}
    {% do dbt_merge.check_column_names(target_columns, existing, brought | map(attribute='name') | list) %}
    {% set schema = dbt_merge.plan_schema_changes(cfg.on_schema_change, target, brought, target_columns) %}
  {% endif %}
  {% set plan = dbt_merge.build_merge_plan(cfg, relations, source_columns, schema, staged['session']) %}
  {#- the table's properties as read with its columns (counted_snapshot, merge_on_branch), or none -#}
  {% do plan.update({'target_properties': described.properties if not rebuild else none}) %}
  {% if plan.history %}
    {#- one time for every version this run opens or closes by the clock -#}
    {% do plan.history.update({'run_time': dbt_merge.history_run_time()}) %}
  {% endif %}
  {% do dbt_merge.check_column_types(plan) %}
  {% if plan.stage != plan.raw_stage %}
    {#-- keys and values as the target will store and compare them; soft-delete columns added --#}
    {% do dbt_merge.create_work_relation(plan.stage, dbt_merge.converted_source_sql(plan), materialize=false, pin='stage') %}
  {% endif %}

  {#-- check the SELECT: keys present, not NULL, unique (or deduplicable), storable --#}
  {% if plan.deduped %}
    {% do dbt_merge.create_work_relation(plan.deduped, dbt_merge.dedupe_source_sql(plan), pin='stage') %}
  {% endif %}
  {% set skipped = dbt_merge.shrinking_run_mode() if not rebuild else none %}
  {#- the count of a merge may test the keys' uniqueness on its own join (count_tests_keys):
      a SELECT too large to broadcast has its keys' uniqueness tested later, on a join that
      partitions it by key anyway: the count's (the passes) or the write-once MERGE's; a smaller
      one by the check's count(distinct), cheaper than a window over a broadcast join -#}
  {% set keys_later = not rebuild and not skipped and dbt_merge.count_tests_keys(plan, staged['bytes']) %}
  {% set checked = dbt_merge.check_source_rows(plan, keys_later) if not check_after_build else none %}
  {% if checked is not none %}
    {#- what the check measured (the SELECT's rows, its keys' range, ...), for the phases after -#}
    {% do plan.update(checked.adds) %}
  {% endif %}
  {% if checked is not none and checked.repeats > 0 %}
    {#-- some keys' first rows are identical repeats: keep one of each --#}
    {% do dbt_merge.drop_work_relation(plan.deduped) %}
    {% do dbt_merge.create_work_relation(plan.deduped, dbt_merge.dedupe_source_sql(plan, one_per_key=true), pin='stage') %}
  {% endif %}
  {% if plan.history %}
    {#-- a history SELECT: updated_at never NULL --#}
    {% do dbt_merge.check_history_source(plan) %}
  {% endif %}

  {#-- an empty increment (the SELECT has no rows today) into a table none of whose rows it
       deletes, with no column to add or change: nothing to classify or write, no commit, no
       snapshot; only the table's rows counted for the total --#}
  {% set empty_increment = not rebuild and not skipped and not plan.history and not cfg.dry_run
        and not plan.deduped and plan.get('source_rows') == 0 and plan.actions.target_only == 'keep'
        and not dbt_merge.schema_changes_any(plan.schema) %}

  {#-- [relation, materialized] pairs to drop at the end --#}
  {% set work_relations = [[plan.deduped, true], [plan.stage if plan.stage != plan.raw_stage else none, false],
                            [plan.raw_stage, not check_after_build]] %}
  {% if cfg.dry_run and rebuild %}
    {#-- dry run of a first build or full refresh: the rows it would load --#}
    {% set total = dbt_merge.count_rows('(' ~ dbt_merge.rebuild_rows_sql(plan) ~ ') as dbt_merge_rebuild') %}
    {% set stats = {'inserted': total, 'updated': 0, 'deleted': 0, 'unchanged': 0, 'total': total, 'dry_run': true} %}
    {% if plan.history %}
      {% do stats.update({'held_back': 0, 'versions': total}) %}
    {% endif %}
  {% elif rebuild %}
    {% do dbt_merge.rebuild_target(plan, existing) %}
    {% if check_after_build %}
      {% do dbt_merge.check_source_rows(dbt_merge.copy_with(plan, {'stage': plan.target, 'raw_stage': plan.target})) %}
    {% endif %}
    {#- the rows this build loaded: inside the model's transaction the table's (DuckDB); on
        Spark, which commits the CREATE at once, those it read (pinned), not the table's, which
        another writer may have written to since -#}
    {% set total = dbt_merge.count_rows(target) if check_after_build
                   else dbt_merge.count_rows('(' ~ dbt_merge.rebuild_rows_sql(plan) ~ ') as dbt_merge_rebuild') %}
    {% set stats = {'inserted': total, 'updated': 0, 'deleted': 0, 'unchanged': 0, 'total': total} %}
    {% if plan.history %}
      {% do stats.update({'held_back': 0, 'versions': total}) %}
    {% endif %}
  {% elif empty_increment %}
    {#- the table's rows as measure_source counted them in this transaction (DuckDB), else counted -#}
    {% set total = plan.sizes[1] if plan.get('sizes') else dbt_merge.count_rows(plan.target) %}
    {% set stats = {'inserted': 0, 'updated': 0, 'deleted': 0, 'unchanged': 0, 'total': total} %}
    {% if plan.update_condition %}
      {#- held back is reported whenever the merge has merge_update_condition (count_changes) -#}
      {% do stats.update({'held_back': 0}) %}
    {% endif %}
    {% if adapter.type() == 'spark' %}
      {#- no snapshot published (the Python door's result says so without looking for one) -#}
      {% do stats.update({'snapshot_id': none}) %}
    {% endif %}
  {% elif skipped %}
    {#-- --empty / --sample shrink the SELECT: merging it would delete or miss rows for no reason --#}
    {% set stats = {'skipped': skipped} %}
  {% elif plan.history %}
    {#-- a history table: its checks, classes, counts and write (macros/*/..history..) --#}
    {#- a table every MERGE into fails, then a write the session's settings would refuse:
        refused before anything is written -#}
    {% do dbt_merge.check_write_session(plan) %}
    {% do plan.update(dbt_merge.counted_snapshot(plan.target, plan.target_storage, plan.target_properties)) %}
    {% do dbt_merge.check_write_session(plan) %}
    {% set target_state = dbt_merge.history_target_totals(plan) %}
    {% do dbt_merge.create_work_relation(plan.changes, dbt_merge.classify_history_sql(plan, target_state), pin='stage') %}
    {% do work_relations.insert(0, [plan.changes, true]) %}
    {% set stats = dbt_merge.count_history(plan, target_state) %}
    {#- after the count, which reads every change (on Spark it fills the changes' cache) -#}
    {% do dbt_merge.check_history_target(plan, target_state) %}
    {% do dbt_merge.check_history_counts(plan, stats, target_state) %}
    {% if cfg.dry_run %}
      {% do stats.update({'dry_run': true}) %}
    {% else %}
      {% do dbt_merge.apply_schema_changes(target, plan.schema) %}
      {% do dbt_merge.apply_history(plan, stats) %}
    {% endif %}
  {% else %}
    {#-- one write into a branch, counted from its commit, then published, where the table's
         commits can say (commit_counts_applies; decided after the check: an empty increment
         never asks); none: the passes --#}
    {#- a table every MERGE into fails (its isolation level), refused before anything is made -#}
    {% do dbt_merge.check_write_session(plan) %}
    {% set stats = dbt_merge.merge_on_branch(plan) if dbt_merge.commit_counts_applies(plan, cfg) else none %}
    {% if stats is none %}
      {#-- the table state counted, checked and written: the write refuses a table that changed since --#}
      {% do plan.update(dbt_merge.counted_snapshot(plan.target, plan.target_storage, plan.target_properties)) %}
      {% do dbt_merge.check_write_session(plan) %}
      {#- a target written by the front end's writer: the rows the SELECT may match (scope_target) -#}
      {% do plan.update(dbt_merge.scope_target(plan)) %}
      {#- whether the classify lists every source row (DuckDB, narrow changes): its form, its count -#}
      {% do plan.update({'every_source_row': dbt_merge.every_source_row(plan)}) %}
      {% set keep_changes = dbt_merge.materialize_changes(plan) %}
      {% if not keep_changes and dbt_merge.inline_changes(plan) %}
        {#- read as a subquery by the count and the write: no view to make and drop -#}
        {% do plan.update({'changes': '(' ~ dbt_merge.classify_changes_sql(plan) ~ ')'}) %}
      {% else %}
        {% do dbt_merge.create_work_relation(plan.changes, dbt_merge.classify_changes_sql(plan), materialize=keep_changes, pin='stage') %}
        {% do work_relations.insert(0, [plan.changes, keep_changes]) %}
      {% endif %}
      {% set stats = dbt_merge.count_changes(plan) %}
      {% do dbt_merge.check_merge_counts(plan, stats) %}
      {% if cfg.dry_run %}
        {% do stats.update({'dry_run': true}) %}
      {% else %}
        {% do dbt_merge.apply_schema_changes(target, plan.schema) %}
        {% do dbt_merge.apply_changes(plan, stats) %}
      {% endif %}
    {% endif %}
  {% endif %}
  {% do dbt_merge.drop_work_relations(work_relations) %}
  {% if staged_copy is not none %}
    {% do dbt_merge.run_statement('drop table if exists ' ~ staged_copy) %}
  {% endif %}
  {% if cfg.history_table and not stats.dry_run and not stats.skipped %}
    {% do dbt_merge.record_merge_history(cfg.history_table, target, cfg.strategy, stats, started_at) %}
  {% endif %}
  {{ return(stats) }}
{% endmacro %}
