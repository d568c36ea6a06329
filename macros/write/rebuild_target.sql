{#- First run and --full-refresh: build the target from the checked (and deduplicated) SELECT. -#}
{% macro rebuild_target(plan, existing) %}
  {% set writer = dbt_merge.target_writer() %}
  {% if writer is not none %}
    {#- a target the front end writes itself (target_writer.sql) -#}
    {{ return(writer.build(plan, dbt_merge.rebuild_rows_sql(plan))) }}
  {% endif %}
  {{ return(adapter.dispatch('rebuild_target', 'dbt_merge')(plan, existing)) }}
{% endmacro %}

{# DuckDB: inside the model's transaction, so a failure keeps the old table. A full refresh builds
   the new table under a work name first, then drops the old one and gives the new one its name:
   the SELECT may read the table it replaces (a full refresh from a query over the target), and
   it is read before anything is dropped. #}
{% macro default__rebuild_target(plan, existing) %}
  {% if existing is none %}
    {% do dbt_merge.run_statement(create_table_as(false, plan.target, dbt_merge.rebuild_rows_sql(plan))) %}
    {{ return(none) }}
  {% endif %}
  {% set built = plan.target.incorporate(path={'identifier': plan.target.identifier ~ '__dbt_merge_new_'
                                                            ~ local_md5(invocation_id)[:10]}) %}
  {% do dbt_merge.run_statement(create_table_as(false, built, dbt_merge.rebuild_rows_sql(plan))) %}
  {% do adapter.drop_relation(existing) %}
  {% do dbt_merge.run_statement('alter table ' ~ built ~ ' rename to ' ~ dbt_merge.quote_identifier(plan.target.identifier)) %}
{% endmacro %}

{# Spark: Iceberg and Delta replace a table atomically (`create or replace table ... as`), so the
   old table is dropped first only when it is a view, or a table of another format than the one
   being built (judged by the table itself, see table_storage). Without file_format, dbt-spark
   writes no USING clause, and Spark 3 would make a Hive table of text files where dbt-spark means
   its default, parquet: the CREATE names the session's default data source itself
   (spark.sql.sources.default, parquet unless set otherwise), read, never set. (A session setting such as
   spark.sql.legacy.createHiveTableByDefault=false, set and put back around the CREATE, reaches
   the CREATEs other dbt threads run in the same session at that moment, see keep_session_conf.)
   A partitioned Hive table needs dynamic partitions, which Hive refuses in its default strict
   mode: that setting is left set (keep_session_conf), for the same reason. #}
{% macro spark__rebuild_target(plan, existing) %}
  {% set file_format = config.get('file_format') or 'parquet' %}
  {#- read before the old table is dropped: a value that cannot be read is refused with it in place -#}
  {% set default_source = dbt_merge.default_data_source() if not config.get('file_format') else none %}
  {% set replaces = existing is not none %}
  {% if existing is not none and (existing.is_view or file_format not in ['iceberg', 'delta']
                                  or dbt_merge.table_storage(existing).provider != file_format) %}
    {% do adapter.drop_relation(existing) %}
    {% set replaces = false %}
  {% endif %}
  {% if file_format == 'hive' and config.get('partition_by') %}
    {% do dbt_merge.keep_session_conf({'hive.exec.dynamic.partition.mode': 'nonstrict'}) %}
  {% endif %}
  {% set create = create_table_as(false, plan.target, dbt_merge.rebuild_rows_sql(plan)) %}
  {% set head = 'create table ' ~ plan.target %}
  {% if not replaces %}
    {#- a first build (or one after the old relation was dropped) creates, never replaces:
        dbt-spark's Iceberg and Delta CREATE is `create or replace`, and a table another writer
        (a second run or thread of the same model, a job) created after this run found none
        would be replaced, its rows lost while that writer reports success. A plain CREATE fails
        then (TABLE_OR_VIEW_ALREADY_EXISTS, or Iceberg's "Table already exists" at its commit)
        and leaves that table as it is (errors.md#spark_created_meanwhile). -#}
    {% set create = create | replace('create or replace table ' ~ plan.target, head, 1) %}
    {% if (create | trim | lower).startswith('create or replace') %}
      {{ dbt_merge.raise_merge_error("cannot make dbt-spark's CREATE statement a plain CREATE (no 'create or replace table "
          ~ plan.target ~ "' in it), and a first build must not replace a table another writer created meanwhile. "
          ~ "Report this with your dbt-spark version. The target was not changed.") }}
    {% endif %}
  {% endif %}
  {% if not config.get('file_format') and (head ~ ' using ') not in create %}
    {#- (a Python door's CREATE names its data source already) -#}
    {% if head not in create %}
      {{ dbt_merge.raise_merge_error("cannot add a USING clause to dbt-spark's CREATE statement (no '" ~ head
          ~ "' in it). Set file_format='parquet' (or another format) on the model.") }}
    {% endif %}
    {% set create = create | replace(head, head ~ ' using ' ~ default_source, 1) %}
  {% endif %}
  {% do dbt_merge.run_statement(create) %}
  {#- the table is built: what earlier runs left for it (an unfinished write too) goes now, not
      before, so that a rebuild refused on the way keeps it (finish_interrupted_write) -#}
  {% do dbt_merge.drop_leftover_work_tables(existing) %}
{% endmacro %}

{#- The rows a first build or full refresh loads: the checked (and deduplicated) SELECT, less the
    rows delete_condition marks. Those delete the key they name; with no table yet there is
    nothing to delete, and they are never inserted (as on an incremental run whose target lacks
    their key). -#}
{% macro rebuild_rows_sql(plan) %}
  {% if plan.history %}
    {{ return(dbt_merge.history_build_rows_sql(plan)) }}
  {% endif %}
  {% set rows = 'select * from ' ~ (plan.deduped or plan.stage) %}
  {% if plan.delete_condition %}
    {% set rows = rows ~ ' as DBT_INTERNAL_SOURCE where not ' ~ dbt_merge.delete_flag(plan) %}
  {% endif %}
  {{ return(rows) }}
{% endmacro %}
