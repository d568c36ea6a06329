{#-
  dbt's own is_incremental() is true only for materialized='incremental'. This one is also true
  for merge models. To make plain is_incremental() work in your merge models, add to your
  project's macros:  {% macro is_incremental() %}{{ return(dbt_merge.is_incremental()) }}{% endmacro %}

  At parse time it records dbt's is_incremental as a macro the calling model depends on, as a
  direct call of dbt's would: dbt requires a unit test of a model that depends on it to override
  is_incremental (and to give `this` when the override is true), and an override in your
  project would otherwise hide that dependency. At run time it asks dbt's is_incremental first,
  and keeps its answer except in a merge model: incremental models keep dbt's answer, and in a
  unit test (materialized 'unit') a unit test's is_incremental override applies.
-#}
{% macro is_incremental() %}
  {% if not execute %}
    {% if config.model.depends_on.add_macro is defined %}
      {% do config.model.depends_on.add_macro('macro.dbt.is_incremental') %}
    {% endif %}
    {{ return(false) }}
  {% endif %}
  {% if model.config.materialized == 'merge' and adapter.type() == 'duckdb' and config.get('location') is not none %}
    {#- a Parquet dataset (dbt-duckdb): incremental once its folder holds Parquet files (the
        folder and the look as the model's job has them: dataset_location, dataset_has_files) -#}
    {{ return(not should_full_refresh() and dbt_merge.dataset_has_files(dbt_merge.dataset_location())) }}
  {% endif %}
  {% set dbt_answer = dbt.is_incremental() %}
  {% if dbt_answer or model.config.materialized != 'merge' %}
    {{ return(dbt_answer) }}
  {% endif %}
  {% set relation = adapter.get_relation(this.database, this.schema, this.table) %}
  {{ return(relation is not none
            and relation.type == 'table'
            and not should_full_refresh()) }}
{% endmacro %}
