{#-
  The table state a merge counts its changes on, taken once, before the classification and the
  counts: on Spark the id (text) of an Iceberg table's current snapshot, as this session sees it.
  The write refuses to commit unless the table is still that snapshot when it reads it
  (snapshot_guard_sql), so the statistics, the checks and the write are of one snapshot.
  none when there is nothing to pin: an engine whose transaction already holds one view
  (DuckDB), a table without snapshots (parquet, Hive), an Iceberg table before its first commit.
-#}
{% macro counted_snapshot(relation) %}
  {{ return(adapter.dispatch('counted_snapshot', 'dbt_merge')(relation)) }}
{% endmacro %}

{% macro default__counted_snapshot(relation) %}
  {{ return(none) }}
{% endmacro %}

{#- Spark: one metadata statement (no Spark job); a parquet or Hive table has no such property. -#}
{% macro spark__counted_snapshot(relation) %}
  {{ return(dbt_merge._current_snapshot(relation)) }}
{% endmacro %}

{#- The id (text) of an Iceberg table's current snapshot as this session sees it, or none before
    its first commit or for a table without snapshots. -#}
{% macro _current_snapshot(relation) %}
  {#- text: the result's type inference may read the id as a number -#}
  {% set value = dbt_merge.run_sql('show tblproperties ' ~ relation ~ " ('current-snapshot-id')",
                                   'dbt_merge_describe').rows[0][1] | string %}
  {{ return(none if value in ['None', 'none'] or 'does not have property' in value else value) }}
{% endmacro %}
