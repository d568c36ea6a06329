{#-
  dbt-spark's `create or replace view`, with an Iceberg view dropped first. For a project's views
  on an Iceberg session catalog with Iceberg's SQL extensions (the documented Spark profile), where
  replacing an Iceberg view leaves Spark reading its first definition (check_upstream_views says
  why). A project opts in with one line in its macros/ (dbt looks for an override of dbt-spark's
  macro in the root project only):

    {% macro spark__create_view_as(relation, sql) %}{{ return(dbt_merge.spark_create_view_as(relation, sql)) }}{% endmacro %}

  The view's metastore entry is read as it is now (dbt's cache may hold a view something else
  dropped since: then there is nothing to drop). An Iceberg view is dropped only once the new SQL
  is analyzed (one EXPLAIN, no Spark job): SQL that Spark refuses fails the model with Spark's
  error and leaves the old view as it was, as dbt-spark's own replace does. Then `drop view if
  exists` and dbt-spark's create, which writes the view's text anew. Between those two
  statements a reader finds no view (dbt-spark's replace is one statement), and a process killed
  between them leaves none: the next run of the model creates it. A view that is not an Iceberg
  view (no SQL extensions, or a Hive view) is replaced as dbt-spark replaces it.
-#}
{% macro spark_create_view_as(relation, sql) %}
  {% if execute %}
    {% set existing = load_cached_relation(relation) %}
    {% if existing is not none and existing.is_view
          and dbt_merge.catalog_views(relation.schema, [relation.identifier]) | selectattr('iceberg') | list %}
      {% set explained = dbt_merge.run_sql('explain extended ' ~ sql, 'dbt_merge_view').rows | map(attribute=0) | join('\n') %}
      {% if dbt_merge.parse_plan_views(explained).error is none %}
        {% do dbt_merge.run_statement('drop view if exists ' ~ relation, 'dbt_merge_view') %}
      {% endif %}
    {% endif %}
  {% endif %}
  {{ return(dbt.spark__create_view_as(relation, sql)) }}
{% endmacro %}
