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
  asks for static mode) and analyzed plans for temporary views (create_work_relation). They stay
  set in the session after the run, as dbt-spark's insert_overwrite strategy leaves dynamic
  partition overwrite set.
-#}
{% macro keep_session_conf(settings) %}
  {% for key, value in settings.items() %}
    {% if value is none %}
      {% do dbt_merge.run_statement('reset ' ~ key, 'dbt_merge_conf') %}
    {% else %}
      {% do dbt_merge.run_statement('set ' ~ key ~ '=' ~ value, 'dbt_merge_conf') %}
    {% endif %}
  {% endfor %}
{% endmacro %}
