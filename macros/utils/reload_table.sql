{#- The target as committed, not as a cache holds it: every later read of its columns, snapshot
    and rows sees the commits other sessions made before this run (red team: a session whose
    Iceberg catalog cache held the table from before another job's update counted a merge against
    that old snapshot, reported its rows unchanged and wrote nothing). -#}
{% macro reload_table(relation) %}
  {{ return(adapter.dispatch('reload_table', 'dbt_merge')(relation)) }}
{% endmacro %}

{% macro default__reload_table(relation) %}
{% endmacro %}

{# Spark: `refresh table` invalidates the session's cached metadata and file listing of the
   table (Iceberg's caching catalog, Hive tables' file index). One statement. #}
{% macro spark__reload_table(relation) %}
  {% do dbt_merge.run_statement('refresh table ' ~ relation, 'dbt_merge_describe') %}
{% endmacro %}
