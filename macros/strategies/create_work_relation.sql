{#-
  A session-scoped working copy of a SELECT, read several times by one run (checks, statistics,
  the write), so that every step sees the same rows and the SELECT runs once.
  materialize=false asks for a plain view (read once).
-#}
{% macro create_work_relation(relation, select_sql, materialize=true) %}
  {{ return(adapter.dispatch('create_work_relation', 'dbt_merge')(relation, select_sql, materialize)) }}
{% endmacro %}

{% macro default__create_work_relation(relation, select_sql, materialize) %}
  {{ dbt_merge.raise_merge_error("no working relation for adapter '" ~ adapter.type() ~ "'.") }}
{% endmacro %}

{# DuckDB: a temp table lives in the connection and is rolled back with the transaction. #}
{% macro duckdb__create_work_relation(relation, select_sql, materialize) %}
  {% do dbt_merge.run_statement('create or replace temporary ' ~ ('table ' if materialize else 'view ')
      ~ relation ~ ' as ' ~ select_sql) %}
{% endmacro %}

{# Spark: a temporary view, cached so later reads do not re-run the SELECT (and do not see the
   target after the MERGE changed it). The cache is lazy: the next statement to read the relation
   is always an aggregate over all of its rows (the source check for the staged SELECT and the
   deduplicate candidates, the count for the changes), which fills the cache before anything is
   written, instead of a separate job to fill it. One exception: candidates rebuilt after a tie
   during a rebuild (first run, full refresh) are filled by the table's creation; they are
   computed from the staged SELECT, cached by then, not from a table being written. Staging +
   checking 200k rows measured 0.8 s this way against 1.5 s with an eager `cache table` (2 cores,
   warm JVM). #}
{% macro spark__create_work_relation(relation, select_sql, materialize) %}
  {#- A temporary view keeps its SQL text by default and is analyzed again at each read, which
      draws new seeds for rand(), uuid() and TABLESAMPLE: the checks, the counts and the MERGE
      would each see other rows, and the lazy cache (looked up by plan) would never be hit.
      Storing the analyzed plan pins the seeds, so every read sees the same rows. -#}
  {% do dbt_merge.run_statement('set spark.sql.legacy.storeAnalyzedPlanForView=true') %}
  {% do dbt_merge.run_statement('create or replace temporary view ' ~ relation ~ ' as ' ~ select_sql) %}
  {% do dbt_merge.run_statement('reset spark.sql.legacy.storeAnalyzedPlanForView') %}
  {% if materialize %}
    {% do dbt_merge.run_statement('cache lazy table ' ~ relation) %}
  {% endif %}
{% endmacro %}

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
