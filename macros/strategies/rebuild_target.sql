{#- First run and --full-refresh: build the target from the checked (and deduplicated) SELECT. -#}
{% macro rebuild_target(plan, existing) %}
  {{ return(adapter.dispatch('rebuild_target', 'dbt_merge')(plan, existing)) }}
{% endmacro %}

{# DuckDB: drop and create inside the model's transaction, so a failure keeps the old table. #}
{% macro default__rebuild_target(plan, existing) %}
  {% if existing is not none %}
    {% do adapter.drop_relation(existing) %}
  {% endif %}
  {% do dbt_merge.run_sql(create_table_as(false, plan.target, 'select * from ' ~ (plan.deduped or plan.stage))) %}
{% endmacro %}

{# Spark: Iceberg and Delta replace a table atomically (`create or replace table ... as`), so the
   old table is dropped first only when it is a view or a format that cannot be replaced. #}
{% macro spark__rebuild_target(plan, existing) %}
  {% if existing is not none and (existing.is_view or config.get('file_format') not in ['iceberg', 'delta']) %}
    {% do adapter.drop_relation(existing) %}
  {% endif %}
  {% do dbt_merge.run_sql(create_table_as(false, plan.target, 'select * from ' ~ (plan.deduped or plan.stage))) %}
{% endmacro %}
