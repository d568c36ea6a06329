{#-
  Set Spark session settings ({key: value}) for the statements that follow, and leave them so
  (a value of none resets the key to the session's default). Nothing is put back, and why:

  A session setting is the session's, not the statement's: on dbt-spark's session method every
  dbt thread shares one SparkSession (so do all connections of a Thrift server with
  `spark.sql.hive.thriftServer.singleSession`), and a value set, or put back, by one model's
  thread reaches the statements other threads run at that moment. Settings that another merge's
  correctness depends on are therefore never put back, and never set to a value another merge
  must not run with: dynamic partition overwrite (overwrite_partitions: a static overwrite of a
  partitioned parquet table would empty every partition it does not write; replace_target never
  asks for static mode). It stays set in the session after the run, as dbt-spark's
  insert_overwrite strategy leaves dynamic partition overwrite set. Analyzed plans for temporary
  views (create_work_relation) are the exception: left set, they would pin every temporary view
  made later in the session to the tables and views it read then (a view over a dbt view model
  would read that model's old definition after dbt replaced it). A dbt model puts that one back
  when its merge ends or is refused (put_back_session_conf), and create_work_relation checks,
  once its view exists, that no other thread put it back meanwhile.
-#}
{#- Spark: a session setting as `set <key>` shows it: {value (text), redacted}. `redacted`: Spark
    shows '*********(redacted)' instead of the value (spark.sql.redaction.options.regex matches the
    key or the value), which then cannot be known: never taken for a value, never written back
    (red team helper-66: `^true$` made the cache's setting be "put back" to that text, Spark's raw
    error). -#}
{% macro session_setting(key, name='dbt_merge_conf') %}
  {% set rows = dbt_merge.run_sql('set ' ~ key, name).rows %}
  {% set value = (rows[0][1] | string) if rows else '' %}
  {{ return({'value': value, 'redacted': '*********(redacted)' in value}) }}
{% endmacro %}

{% macro keep_session_conf(settings) %}
  {% for key, value in settings.items() %}
    {% if value is none %}
      {% do dbt_merge.run_statement('reset ' ~ key, 'dbt_merge_conf') %}
    {% else %}
      {% do dbt_merge.run_statement('set ' ~ key ~ '=' ~ value, 'dbt_merge_conf') %}
    {% endif %}
  {% endfor %}
{% endmacro %}

{#- A dbt model's merge, at its end or its refusal: put back the settings create_work_relation
    needs only while it makes its views (spark.sql.legacy.storeAnalyzedPlanForView), to the value
    the session started with (RESET: the session's own configuration, e.g. dbt-spark's
    server_side_parameters). The Python doors do not call it: they put back every setting a call
    set, once no other call of the session holds it (dbt_merge.spark.session.SessionSettings).
    A merge that fails on an error of Spark's own (not one of the package's refusals) leaves it
    set until the next merge model of the session ends. -#}
{% macro put_back_session_conf() %}
  {{ return(adapter.dispatch('put_back_session_conf', 'dbt_merge')()) }}
{% endmacro %}

{% macro default__put_back_session_conf() %}
{% endmacro %}

{% macro spark__put_back_session_conf() %}
  {% do dbt_merge.run_statement('reset spark.sql.legacy.storeAnalyzedPlanForView', 'dbt_merge_conf') %}
{% endmacro %}
