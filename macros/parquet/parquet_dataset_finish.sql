{#-
  After the Parquet dataset job (parquet_dataset_job): raise its error, or point the model's
  relation at the dataset (a view over `location/**/*.parquet`, as dbt-duckdb's external models
  do, so ref() reads it), report the statistics, run the post-hooks and commit.
-#}
{% macro parquet_dataset_finish(job) %}
  {% set row = dbt_merge.run_sql('select * from ' ~ job.result, 'dbt_merge_parquet_result').rows[0] %}
  {% do dbt_merge.run_statement('drop table if exists ' ~ job.result) %}
  {% if row[0] is not none %}
    {{ dbt_merge.raise_merge_error(row[0]) }}
  {% endif %}
  {% if row[7] is not none %}
    {% set stats = {'skipped': row[7]} %}
  {% else %}
    {% set stats = {'inserted': row[1] | int, 'updated': row[2] | int, 'deleted': row[3] | int,
                    'unchanged': row[4] | int, 'total': row[5] | int} %}
  {% endif %}
  {% set target = this.incorporate(type='view') %}
  {% set existing = load_cached_relation(this) %}
  {% if existing is not none and not existing.is_view %}
    {% do adapter.drop_relation(existing) %}
  {% endif %}
  {% do dbt_merge.run_statement('create or replace view ' ~ target ~ ' as select * from ' ~ row[6]) %}
  {% do dbt_merge.report_merge_stats(job.strategy, stats) %}
  {% do persist_docs(target, model) %}
  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {% do adapter.commit() %}
  {{ run_hooks(post_hooks, inside_transaction=False) }}
  {{ return({'relations': [target]}) }}
{% endmacro %}
