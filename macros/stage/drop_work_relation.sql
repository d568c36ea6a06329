{#- Drop what create_work_relation made (pass the same `materialize`). -#}
{% macro drop_work_relation(relation, materialize=true) %}
  {{ return(adapter.dispatch('drop_work_relation', 'dbt_merge')(relation, materialize)) }}
{% endmacro %}

{% macro default__drop_work_relation(relation, materialize) %}
  {% do dbt_merge.run_statement('drop ' ~ ('table' if materialize else 'view') ~ ' if exists ' ~ relation) %}
{% endmacro %}

{#- Spark: a work relation is a temporary view, cached when materialized (cache_lazy). DROP VIEW
    removes its cache entry too (seen on Spark 3.5: the session's cache manager is empty after
    it), so no UNCACHE TABLE first: one statement fewer per cached relation. -#}
{% macro spark__drop_work_relation(relation, materialize) %}
  {% do dbt_merge.run_statement('drop view if exists ' ~ relation) %}
{% endmacro %}

{#- Drop several work relations: a list of [relation, materialize] pairs; a none relation is skipped. -#}
{% macro drop_work_relations(pairs) %}
  {% set present = [] %}
  {% for pair in pairs if pair[0] %}
    {% do present.append(pair) %}
  {% endfor %}
  {{ return(adapter.dispatch('drop_work_relations', 'dbt_merge')(present)) }}
{% endmacro %}

{% macro default__drop_work_relations(pairs) %}
  {% for relation, materialize in pairs %}
    {% do dbt_merge.drop_work_relation(relation, materialize) %}
  {% endfor %}
{% endmacro %}

{# DuckDB runs a ;-separated script in one call: one round trip instead of one per relation. #}
{% macro duckdb__drop_work_relations(pairs) %}
  {% set statements = [] %}
  {% for relation, materialize in pairs %}
    {% do statements.append('drop ' ~ ('table' if materialize else 'view') ~ ' if exists ' ~ relation) %}
  {% endfor %}
  {% if statements %}
    {% do dbt_merge.run_statement(statements | join(';\n')) %}
  {% endif %}
{% endmacro %}
