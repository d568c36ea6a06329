{#- First run and --full-refresh: build the target from the checked (and deduplicated) SELECT. -#}
{% macro rebuild_target(plan, existing) %}
  {{ return(adapter.dispatch('rebuild_target', 'dbt_merge')(plan, existing)) }}
{% endmacro %}

{# DuckDB: drop and create inside the model's transaction, so a failure keeps the old table. #}
{% macro default__rebuild_target(plan, existing) %}
  {% if existing is not none %}
    {% do adapter.drop_relation(existing) %}
  {% endif %}
  {% do dbt_merge.run_statement(create_table_as(false, plan.target, dbt_merge.rebuild_rows_sql(plan))) %}
{% endmacro %}

{# Spark: Iceberg and Delta replace a table atomically (`create or replace table ... as`), so the
   old table is dropped first only when it is a view, or a table of another format than the one
   being built (judged by the table itself, see table_storage). Two settings for the CREATE:
   without file_format, Spark 3 would make a Hive table of text files (no USING clause), where
   dbt-spark means its default, parquet: the session's default data source is used instead; and a
   partitioned Hive table needs dynamic partitions, which Hive refuses in its default strict mode. #}
{% macro spark__rebuild_target(plan, existing) %}
  {% set file_format = config.get('file_format') or 'parquet' %}
  {% if existing is not none and (existing.is_view or file_format not in ['iceberg', 'delta']
                                  or dbt_merge.table_storage(existing).provider != file_format) %}
    {% do adapter.drop_relation(existing) %}
  {% endif %}
  {% set settings = {} %}
  {% if not config.get('file_format') %}
    {% do settings.update({'spark.sql.legacy.createHiveTableByDefault': 'false'}) %}
  {% elif file_format == 'hive' and config.get('partition_by') %}
    {% do settings.update({'hive.exec.dynamic.partition.mode': 'nonstrict'}) %}
  {% endif %}
  {% set previous = dbt_merge.set_session_conf(settings) %}
  {% do dbt_merge.run_statement(create_table_as(false, plan.target, dbt_merge.rebuild_rows_sql(plan))) %}
  {% do dbt_merge.restore_session_conf(previous) %}
{% endmacro %}

{#- The rows a first build or full refresh loads: the checked (and deduplicated) SELECT, less the
    rows delete_condition marks. Those delete the key they name; with no table yet there is
    nothing to delete, and they are never inserted (as on an incremental run whose target lacks
    their key). -#}
{% macro rebuild_rows_sql(plan) %}
  {% set rows = 'select * from ' ~ (plan.deduped or plan.stage) %}
  {% if plan.delete_condition %}
    {% set rows = rows ~ ' as DBT_INTERNAL_SOURCE where not ' ~ dbt_merge._delete_flag(plan) %}
  {% endif %}
  {{ return(rows) }}
{% endmacro %}

{#- Whether a first build or full refresh may load the target straight from the SELECT and check
    the rows it loaded (NULL and repeated keys) afterwards, failing the run before the commit:
    only where the model's transaction rolls the new table back (and keeps the old one). It
    saves writing the SELECT twice (DuckDB, 5M rows: the staged copy and its check cost as much
    as a third of dbt's `table` materialization). Not for deduplicate (its candidates are
    checked before the build), delete_condition (rows it marks are not loaded, but must be
    checked) or soft deletes (columns added to the SELECT). -#}
{% macro check_after_rebuild(cfg) %}
  {{ return(adapter.dispatch('check_after_rebuild', 'dbt_merge')(cfg)) }}
{% endmacro %}

{% macro default__check_after_rebuild(cfg) %}
  {{ return(false) }}
{% endmacro %}

{% macro duckdb__check_after_rebuild(cfg) %}
  {{ return(not cfg.dry_run and not cfg.actions.dedupe and not cfg.delete_condition
            and not cfg.soft_delete) }}
{% endmacro %}
