{#-
  After the Parquet dataset job (parquet_dataset_job): raise its error, or point the model's
  relation at the dataset (a view, as dbt-duckdb's external models do, so ref() reads it),
  report the statistics, run the post-hooks and commit. The job's result is one row, read by
  column name (dbt_merge.parquet.dbt_job.RESULT_COLUMNS).

  The job has written the merge's files but not published them: the dataset changes last, as a
  table's merge is committed last. Until then the view reads the dataset as the merge leaves it
  (read_sql: the files that stay and the new ones, still in the work folder), so the post-hooks
  see the merged rows; a failing view, docs or post-hook fails the model with the dataset as it
  was. Then the publish (publish, a SQL function the job registered on this connection: one
  atomic directory swap), and the view over `location/**/*.parquet` (final_sql).
-#}
{% macro parquet_dataset_finish(job) %}
  {% set row = dbt_merge.run_sql('select * from ' ~ job.result, 'dbt_merge_parquet_result').rows[0] %}
  {% do dbt_merge.run_statement('drop table if exists ' ~ job.result) %}
  {% if row['error'] is not none %}
    {{ dbt_merge.raise_merge_error(row['error']) }}
  {% endif %}
  {% if row['skipped'] is not none %}
    {% set stats = {'skipped': row['skipped']} %}
  {% else %}
    {% set stats = {'inserted': row['inserted'] | int, 'updated': row['updated'] | int,
                    'deleted': row['deleted'] | int, 'unchanged': row['unchanged'] | int,
                    'total': row['total'] | int} %}
    {% if row['versions'] is not none %}
      {% do stats.update({'versions': row['versions'] | int}) %}
    {% endif %}
    {% if row['held_back'] is not none %}
      {% do stats.update({'held_back': row['held_back'] | int}) %}
    {% endif %}
  {% endif %}
  {% set target = this.incorporate(type='view') %}
  {% if row['dry_run'] %}
    {#- dry_run: nothing was written; the dataset and the model's view are left as they are -#}
    {% do stats.update({'dry_run': true}) %}
    {% do dbt_merge.report_merge_stats(job.strategy, stats) %}
    {{ run_hooks(post_hooks, inside_transaction=True) }}
    {% do adapter.commit() %}
    {{ run_hooks(post_hooks, inside_transaction=False) }}
    {{ return({'relations': [target]}) }}
  {% endif %}
  {% set existing = load_cached_relation(this) %}
  {% if existing is not none and not existing.is_view %}
    {% do adapter.drop_relation(existing) %}
  {% endif %}
  {% do dbt_merge.run_statement('create or replace view ' ~ target ~ ' as select * from ' ~ row['read_sql']) %}
  {% do dbt_merge.report_merge_stats(job.strategy, stats) %}
  {% do persist_docs(target, model) %}
  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {% if row['publish'] is not none %}
    {% do dbt_merge.run_sql('select ' ~ row['publish'] ~ '()', 'dbt_merge_parquet') %}
    {% do dbt_merge.run_statement('create or replace view ' ~ target ~ ' as select * from ' ~ row['final_sql']) %}
    {% do persist_docs(target, model) %}
  {% endif %}
  {% do adapter.commit() %}
  {{ run_hooks(post_hooks, inside_transaction=False) }}
  {{ return({'relations': [target]}) }}
{% endmacro %}
