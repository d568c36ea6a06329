{#- Every error the package raises goes through here, so they all start the same way:
    the package, the model, then what is wrong and how to fix it. A merge model's work relations
    are dropped first: a refused run leaves nothing behind, as a successful one does. -#}
{% macro raise_merge_error(message) %}
  {% if execute and model.get('resource_type') == 'model' and config.get('materialized') == 'merge' %}
    {% do dbt_merge.drop_failed_work_relations() %}
  {% endif %}
  {{ exceptions.raise_compiler_error("dbt_merge: model '" ~ model.name ~ "': " ~ message) }}
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
