{#-
  Set Spark session settings ({key: value}) for the statements that follow, and return what they
  were, to restore them afterwards with another call (a value of none resets the key to the
  session's default). Session-wide: on dbt-spark's session method every thread shares the
  SparkSession; over thrift each dbt connection has its own session.
-#}
{% macro set_session_conf(settings) %}
  {{ return(adapter.dispatch('set_session_conf', 'dbt_merge')(settings)) }}
{% endmacro %}

{% macro default__set_session_conf(settings) %}
  {{ dbt_merge.raise_merge_error("no session settings for adapter '" ~ adapter.type() ~ "'.") }}
{% endmacro %}

{% macro spark__set_session_conf(settings) %}
  {% set previous = {} %}
  {% for key, value in settings.items() %}
    {% set current = dbt_merge.run_sql('set ' ~ key, 'dbt_merge_conf').rows[0][1] %}
    {% do previous.update({key: none if current == '<undefined>' else current}) %}
    {% if value is none %}
      {% do dbt_merge.run_statement('reset ' ~ key, 'dbt_merge_conf') %}
    {% else %}
      {% do dbt_merge.run_statement('set ' ~ key ~ '=' ~ value, 'dbt_merge_conf') %}
    {% endif %}
  {% endfor %}
  {{ return(previous) }}
{% endmacro %}
