{#-
  Hand the statistics to dbt as the model's result: the console line shows the message, and
  run_results.json carries it as adapter_response (_message, code, rows_affected).
-#}
{% macro report_merge_stats(plan_strategy, stats) %}
  {% set message = 'MERGE ' ~ plan_strategy ~ ': '
      ~ stats.inserted ~ ' inserted, ' ~ stats.updated ~ ' updated, ' ~ stats.deleted ~ ' deleted, '
      ~ stats.unchanged ~ ' unchanged, ' ~ stats.total ~ ' total' %}
  {% do store_raw_result(name='main', message=message, code='MERGE',
                         rows_affected=stats.inserted + stats.updated + stats.deleted) %}
  {{ log('dbt_merge ' ~ model.name ~ ' ' ~ tojson(stats)) }}
{% endmacro %}
