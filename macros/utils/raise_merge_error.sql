{#- Every error the package raises goes through here, so they all start the same way
    (merge_error_prefix): the package, the model, then what is wrong and how to fix it. A merge
    model's work relations are dropped first: a refused run leaves nothing behind, as a
    successful one does. -#}
{% macro raise_merge_error(message) %}
  {% if execute and model.get('resource_type') == 'model' and config.get('materialized') == 'merge' %}
    {% do dbt_merge.drop_failed_work_relations() %}
  {% endif %}
  {{ exceptions.raise_compiler_error(dbt_merge.merge_error_prefix() ~ message) }}
{% endmacro %}

{#- The work relations (work_relations) this run of the model may have made, dropped if they
    exist. -#}
{% macro drop_failed_work_relations() %}
  {{ return(adapter.dispatch('drop_failed_work_relations', 'dbt_merge')()) }}
{% endmacro %}

{# DuckDB: temp tables and views, rolled back with the model's transaction. #}
{% macro default__drop_failed_work_relations() %}
{% endmacro %}

{# Spark: temporary views, some cached, live as long as the session: on dbt-spark's session method
   that is the caller's SparkSession, where a cached view would hold its rows in memory. #}
{% macro spark__drop_failed_work_relations() %}
  {% set relations = dbt_merge.work_relations(this.incorporate(type='table'), {'actions': {'dedupe': true}}) %}
  {% set pairs = [] %}
  {% for role in ['changes', 'deduped', 'converted', 'stage'] %}
    {% do pairs.append([relations[role], true]) %}
  {% endfor %}
  {% do dbt_merge.drop_work_relations(pairs) %}
  {% do dbt_merge.put_back_session_conf() %}
{% endmacro %}

{#- How every message of the package starts: `dbt_merge: model '<name>': `. Also the start of the
    messages a statement raises itself (raise_error in a MERGE or a guard) and of a warning; the
    Python doors find the message in a Spark error by it (dbt_merge.spark.api._raised_message)
    and say `table '<name>'` instead. The one place that writes it. -#}
{% macro merge_error_prefix() %}
  {{ return("dbt_merge: model '" ~ model.name ~ "': ") }}
{% endmacro %}
