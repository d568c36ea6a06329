{#- Drop what create_work_relation made (pass the same `materialize`). -#}
{% macro drop_work_relation(relation, materialize=true) %}
  {{ return(adapter.dispatch('drop_work_relation', 'dbt_merge')(relation, materialize)) }}
{% endmacro %}

{% macro default__drop_work_relation(relation, materialize) %}
  {% do dbt_merge.run_sql('drop ' ~ ('table' if materialize else 'view') ~ ' if exists ' ~ relation) %}
{% endmacro %}

{% macro spark__drop_work_relation(relation, materialize) %}
  {% if materialize %}
    {% do dbt_merge.run_sql('uncache table if exists ' ~ relation) %}
  {% endif %}
  {% do dbt_merge.run_sql('drop view if exists ' ~ relation) %}
{% endmacro %}
