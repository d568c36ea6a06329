{#- Whether the changes relation is worth materializing: it is read by the count and the writes. -#}
{% macro materialize_changes(plan) %}
  {{ return(adapter.dispatch('materialize_changes', 'dbt_merge')(plan)) }}
{% endmacro %}

{% macro default__materialize_changes(plan) %}
  {{ return(true) }}
{% endmacro %}

{# Spark: the narrow changes are read by the count, and by the MERGE only when some matched rows
   are unchanged and others updated. Counting straight from the view measured 1.0 s against
   1.1 s to cache it plus 0.3 s to count (2M-row Iceberg target, 200k-row source, warm JVM). #}
{% macro spark__materialize_changes(plan) %}
  {{ return(not plan.writes_source_rows) }}
{% endmacro %}
