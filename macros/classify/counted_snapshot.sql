{#-
  The table state a merge counts its changes on, taken once, before the classification and the
  counts: on Spark the id (text) of an Iceberg table's current snapshot, as this session sees it.
  The write refuses to commit unless the table is still that snapshot when it reads it
  (snapshot_guard_sql), so the statistics, the checks and the write are of one snapshot.
  Returns {snapshot, no_commit_yet}, which run_merge puts in the plan: snapshot is none when there
  is no snapshot to pin: an engine whose transaction already holds one view (DuckDB), a table
  without snapshots (parquet, Hive), an Iceberg table before its first commit; no_commit_yet is
  true for the last, whose write is then guarded on the table still having no commit (another
  writer's first commit after the counts would otherwise be unseen).
-#}
{% macro counted_snapshot(relation, storage=none, properties=none) %}
  {{ return(adapter.dispatch('counted_snapshot', 'dbt_merge')(relation, storage, properties)) }}
{% endmacro %}

{% macro default__counted_snapshot(relation, storage=none, properties=none) %}
  {{ return({'snapshot': none, 'no_commit_yet': false}) }}
{% endmacro %}

{#- Spark: one metadata statement (no Spark job); a parquet or Hive table has no such property,
    an Iceberg table before its first commit has it as `none`. `storage` (table_storage of the
    run, when known): a table whose provider is not Iceberg has no snapshot to read, and costs no
    statement (its write, a partition overwrite, takes no snapshot guard; the provider also
    chose that write). `properties`: the table's properties as the run read them with its
    columns after reloading it (described_target), when it could: the same state, no statement;
    a value that is not a snapshot id (redacted, say) is asked for again. -#}
{% macro spark__counted_snapshot(relation, storage=none, properties=none) %}
  {% if storage and storage.provider and storage.provider != 'iceberg' %}
    {{ return({'snapshot': none, 'no_commit_yet': false}) }}
  {% endif %}
  {% set listed = (properties or {}).get('current-snapshot-id') or '' %}
  {% set value = listed if modules.re.match('^(-?[0-9]+|none)$', listed) else dbt_merge._snapshot_property(relation) %}
  {{ return({'snapshot': dbt_merge._snapshot_id(value, relation), 'no_commit_yet': value in ['None', 'none']}) }}
{% endmacro %}

{#- The id (text) of an Iceberg table's current snapshot as this session sees it, or none before
    its first commit or for a table without snapshots. -#}
{% macro current_snapshot(relation) %}
  {{ return(dbt_merge._snapshot_id(dbt_merge._snapshot_property(relation), relation)) }}
{% endmacro %}

{#- The table's current-snapshot-id property as SHOW TBLPROPERTIES gives it (text: the result's
    type inference may read the id as a number). -#}
{% macro _snapshot_property(relation) %}
  {{ return(dbt_merge.run_sql('show tblproperties ' ~ relation ~ " ('current-snapshot-id')",
                              'dbt_merge_describe').rows[0][1] | string) }}
{% endmacro %}

{#- The snapshot id in the property's text, none before the first commit or without snapshots.
    Any other text (Spark shows a property redacted, '*********(redacted)', when its name or value
    matches spark.sql.redaction.options.regex) is refused before anything is written: the write's
    guard compares the table's snapshot with it (a raw PARSE_SYNTAX_ERROR before). -#}
{% macro _snapshot_id(value, relation) %}
  {% if value in ['None', 'none'] or 'does not have property' in value %}
    {{ return(none) }}
  {% endif %}
  {% if not modules.re.match('^-?[0-9]+$', value) %}
    {{ dbt_merge.raise_merge_error("cannot read the current snapshot of " ~ relation ~ ": Spark shows its "
        ~ "current-snapshot-id property as '" ~ value ~ "' (spark.sql.redaction.options.regex redacts a table "
        ~ "property whose name or value it matches), and the write must be guarded by that id. Set "
        ~ "spark.sql.redaction.options.regex so that it matches neither current-snapshot-id nor the "
        ~ "table's snapshot ids, then run the merge again. The target was not changed.") }}
  {% endif %}
  {{ return(value) }}
{% endmacro %}
