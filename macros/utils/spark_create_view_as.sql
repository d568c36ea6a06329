{#-
  dbt-spark's `create or replace view`, with an Iceberg view dropped first. For a project's views
  on an Iceberg session catalog with Iceberg's SQL extensions (the documented Spark profile), where
  replacing an Iceberg view leaves Spark reading its first definition (check_upstream_views says
  why). A project opts in with one line in its macros/ (dbt looks for an override of dbt-spark's
  macro in the root project only):

    {% macro spark__create_view_as(relation, sql) %}{{ return(dbt_merge.spark_create_view_as(relation, sql)) }}{% endmacro %}

  The view is then dropped and created, which writes its text anew: between the two, a reader
  finds no view (dbt-spark's own replace is one statement). A view that is not an Iceberg view
  (no SQL extensions, or a Hive view) is replaced as dbt-spark replaces it.
-#}
{% macro spark_create_view_as(relation, sql) %}
  {% if execute %}
    {% set existing = load_cached_relation(relation) %}
    {% if existing is not none and existing.is_view
          and dbt_merge._view_properties(relation).get('table_type', '') | upper == 'ICEBERG-VIEW' %}
      {% do dbt_merge.run_statement('drop view ' ~ relation, 'dbt_merge_view') %}
    {% endif %}
  {% endif %}
  {{ return(dbt.spark__create_view_as(relation, sql)) }}
{% endmacro %}
