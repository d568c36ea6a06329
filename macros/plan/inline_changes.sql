{#- Whether the changes are better written into the statements that read them, as a subquery,
    than made a view: a view that is not materialized is read as its SQL would be (the views made
    from the stage read only the pinned, cached stage and the target, whose commits since the
    count the write refuses: snapshot_guard_sql), and costs two statements (create, drop). -#}
{% macro inline_changes(plan) %}
  {{ return(adapter.dispatch('inline_changes', 'dbt_merge')(plan)) }}
{% endmacro %}

{% macro default__inline_changes(plan) %}
  {{ return(false) }}
{% endmacro %}

{#- Spark: the narrow changes of a MERGE INTO (read by the count and once by the MERGE); not those
    of a partition overwrite, which caches them by name (overwrite_partitions). -#}
{% macro spark__inline_changes(plan) %}
  {{ return(plan.writes_source_rows and (plan.target_storage or {}).get('write') == 'merge') }}
{% endmacro %}
