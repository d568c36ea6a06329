{#-
  Set Spark session settings ({key: value}) for the statements that follow, and return what they
  were, to put back afterwards with restore_session_conf (a value of none resets the key to the
  session's default).

  A session setting is the session's, not the statement's: on dbt-spark's session method every
  dbt thread shares one SparkSession (so do all connections of a Thrift server with
  `spark.sql.hive.thriftServer.singleSession`), and a value set, or put back, by one model's
  thread reaches the statements other threads run at that moment. Settings that another merge's
  correctness depends on are therefore never put back, and never set to a value another merge
  must not run with: dynamic partition overwrite (overwrite_partitions: a static overwrite of a
  partitioned parquet table would empty every partition it does not write; replace_target never
  asks for static mode) and analyzed plans for temporary views (create_work_relation). They stay
  set in the session after the run, as dbt-spark's insert_overwrite strategy leaves dynamic
  partition overwrite set.
-#}
{% macro set_session_conf(settings) %}
  {{ return(adapter.dispatch('set_session_conf', 'dbt_merge')(settings)) }}
{% endmacro %}

{% macro default__set_session_conf(settings) %}
  {{ dbt_merge.raise_merge_error("no session settings for adapter '" ~ adapter.type() ~ "'.") }}
{% endmacro %}

{% macro spark__set_session_conf(settings) %}
  {% set previous = {} %}
  {% for key in settings %}
    {% set current = dbt_merge.run_sql('set ' ~ key, 'dbt_merge_conf').rows[0][1] %}
    {% do previous.update({key: none if current == '<undefined>' else current}) %}
  {% endfor %}
  {% do dbt_merge.keep_session_conf(settings) %}
  {{ return(previous) }}
{% endmacro %}

{#- Put back the settings set_session_conf returned. -#}
{% macro restore_session_conf(previous) %}
  {% do dbt_merge.keep_session_conf(previous) %}
{% endmacro %}

{#- Set session settings and leave them so (see above); none resets a key. -#}
{% macro keep_session_conf(settings) %}
  {% for key, value in settings.items() %}
    {% if value is none %}
      {% do dbt_merge.run_statement('reset ' ~ key, 'dbt_merge_conf') %}
    {% else %}
      {% do dbt_merge.run_statement('set ' ~ key ~ '=' ~ value, 'dbt_merge_conf') %}
    {% endif %}
  {% endfor %}
{% endmacro %}
