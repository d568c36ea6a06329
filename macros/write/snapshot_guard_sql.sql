{#-
  A boolean SQL condition that is true while `plan.target` is still the snapshot the merge counted
  (plan.snapshot, counted_snapshot), or still has no commit when it was counted with none
  (plan.no_commit_yet), and otherwise fails the statement it stands in with the package's
  message; none when there is nothing to guard (a table without snapshots).
  The write (MERGE INTO, INSERT OVERWRITE) filters its source rows with it. Spark runs the scalar
  subquery when the statement executes, after it has chosen the snapshot its target scan reads, and
  reads the table's `main` reference through the same catalog: a commit that lands after the
  counts, up to the moment the write runs, fails the write before anything is committed. A commit
  after that is Iceberg's to refuse: a MERGE that has a WHEN MATCHED clause is validated from the
  snapshot it read (merge_source_rows_sql keeps one on every MERGE); an INSERT OVERWRITE is not
  (replace_target checks its commit's parent afterwards).
-#}
{% macro snapshot_guard_sql(plan) %}
  {{ return(adapter.dispatch('snapshot_guard_sql', 'dbt_merge')(plan)) }}
{% endmacro %}

{% macro default__snapshot_guard_sql(plan) %}
  {{ return(none) }}
{% endmacro %}

{#- Spark: an Iceberg table counted with no commit yet (plan.no_commit_yet) is guarded on it still
    having none; nothing to guard on a table without snapshots, or a branch the run made. -#}
{% macro spark__snapshot_guard_sql(plan) %}
  {% if plan.get('snapshot') is none and not plan.get('no_commit_yet') %}
    {{ return(none) }}
  {% endif %}
  {{ return(dbt_merge.snapshot_is_sql(plan.target, plan.snapshot, dbt_merge.concurrent_commit_message(plan))) }}
{% endmacro %}

{#- True while Iceberg table `relation`'s `main` reference is snapshot `snapshot` (none: while
    the table has no commit yet); otherwise the statement fails with `message`. -#}
{% macro snapshot_is_sql(relation, snapshot, message) %}
  {% set holds = ("(select count(*) from " ~ relation ~ ".refs where name = 'main') = 0" if snapshot is none
                  else "(select snapshot_id from " ~ relation ~ ".refs where name = 'main') = " ~ snapshot) %}
  {{ return("case when " ~ holds ~ " then true else raise_error(" ~ dbt_merge.sql_string(message) ~ ") end") }}
{% endmacro %}

{#- What a run whose table changed under it says: raised inside Spark (a statement's raise_error),
    with the prefix raise_merge_error would give it; `prefixed=false` for raise_merge_error itself. -#}
{% macro concurrent_commit_message(plan, prefixed=true) %}
  {#- the schema change is made before the write, a commit of its own that stays (red team
      helper-43: "nothing was written" while the column added was in the table) -#}
  {% set altered = dbt_merge.schema_changes_any(plan.get('schema')) %}
  {{ return((dbt_merge.merge_error_prefix() if prefixed else "") ~ "another writer committed to " ~ plan.target
      ~ " after this run counted its changes on snapshot "
      ~ (plan.get('snapshot') if plan.get('snapshot') is not none else "none (the table had no commit yet)")
      ~ (", so none of its rows were written (the column change on_schema_change made before the write stays) "
         if altered else ", so nothing was written ")
      ~ "(the counts and the checks would not be of the table the write changes). Running the model "
      ~ "again is safe: it counts the table as it is then.") }}
{% endmacro %}
