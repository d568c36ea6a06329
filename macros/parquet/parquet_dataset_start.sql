{#-
  Between the Parquet dataset job's check (parquet_dataset_job's check_code: the location's
  checks, which need the file system: another model's folder, another table format's, a path
  readers could not glob) and its merge: raise the check's refusal, so a refused model runs no
  pre-hook; else run the pre-hooks, and check an enforced contract (the SELECT's columns and
  types, on every run, as for tables).
-#}
{% macro parquet_dataset_start(job) %}
  {% set row = dbt_merge.run_sql('select error from ' ~ job.result, 'dbt_merge_parquet_check').rows[0] %}
  {% do dbt_merge.run_statement('drop table if exists ' ~ job.result) %}
  {% if row['error'] is not none %}
    {{ dbt_merge.raise_merge_error(row['error']) }}
  {% endif %}
  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}
  {% if (config.get('contract') or {}).enforced %}
    {% do get_assert_columns_equivalent(sql) %}
  {% endif %}
{% endmacro %}
