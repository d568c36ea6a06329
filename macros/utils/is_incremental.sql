{#-
  dbt's own is_incremental() is true only for materialized='incremental'. This one is also true
  for merge models. To make plain is_incremental() work in your merge models, add to your
  project's macros:  {% macro is_incremental() %}{{ return(dbt_merge.is_incremental()) }}{% endmacro %}
-#}
{% macro is_incremental() %}
  {% if not execute %}
    {{ return(false) }}
  {% endif %}
  {% set relation = adapter.get_relation(this.database, this.schema, this.table) %}
  {{ return(relation is not none
            and relation.type == 'table'
            and model.config.materialized in ['incremental', 'merge']
            and not should_full_refresh()) }}
{% endmacro %}
