{#- On Spark, dbt replaces a `view` model with `create or replace view`; on an Iceberg session
    catalog with Iceberg's SQL extensions (this project's `spark` profile) Spark would go on
    reading such a view's first definition. This drops it first (docs/spark.md). -#}
{% macro spark__create_view_as(relation, sql) %}{{ return(dbt_merge.spark_create_view_as(relation, sql)) }}{% endmacro %}
