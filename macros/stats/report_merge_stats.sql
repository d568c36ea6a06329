{#-
  Hand the statistics to dbt as the model's result: the console line shows the message, and
  run_results.json carries it as adapter_response (_message, code, rows_affected). A history
  merge (strategy='history') adds its versions (the table's rows; total is its current versions)
  and always says how many rows it held back. A run that
  did not write ({'skipped': reason}) says so instead of counts. `dbt-merge report` reads the
  statistics back from these messages (adapter/dbt_merge/report.py): change both together
  (tests/package/test_report.py renders this macro for any statistics and reads them back).
-#}
{% macro report_merge_stats(plan_strategy, stats) %}
  {% if stats.skipped %}
    {% set message = 'MERGE ' ~ plan_strategy ~ ': skipped (' ~ stats.skipped ~ '): the target was not changed' %}
    {% do store_raw_result(name='main', message=message, code='MERGE', rows_affected=0) %}
    {{ log('dbt_merge ' ~ model.name ~ ' ' ~ message) }}
    {{ return(none) }}
  {% endif %}
  {% set message = ('DRY RUN (nothing written) ' if stats.dry_run else '') ~ 'MERGE ' ~ plan_strategy ~ ': '
      ~ stats.inserted ~ ' inserted, ' ~ stats.updated ~ ' updated, ' ~ stats.deleted ~ ' deleted, '
      ~ stats.unchanged ~ ' unchanged, ' ~ stats.total ~ ' total'
      ~ (', ' ~ stats.held_back ~ ' held back' if stats.held_back is defined else '')
      ~ (', ' ~ stats.versions ~ ' versions' if stats.versions is defined else '') %}
  {% do store_raw_result(name='main', message=message, code='DRY RUN' if stats.dry_run else 'MERGE',
                         rows_affected=0 if stats.dry_run else stats.inserted + stats.updated + stats.deleted) %}
  {{ log('dbt_merge ' ~ model.name ~ ' ' ~ tojson(stats)) }}
{% endmacro %}
