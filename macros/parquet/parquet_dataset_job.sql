{#-
  A `merge` model with a `location` config merges into a Parquet dataset (a folder of Parquet
  files) instead of a table, on dbt-duckdb. The merge itself is the package's Python side
  (dbt_merge.parquet: the same plan and checks, rendered from these macros), run as a
  dbt-duckdb Python job on the model's connection. This macro returns the job:
  {'check_code': the Python module that refuses the model before its pre-hooks (the location's
  checks), 'code': the one that merges, each for statement(language='python'), 'result': the
  temporary table each leaves its outcome in}. parquet_dataset_start reads the check's and runs
  the pre-hooks; parquet_dataset_finish reads the merge's.

  Config: location (the folder; relative paths are relative to where dbt runs, as for
  dbt-duckdb's external models; `~` is the home folder, see dataset_location), unique_key, strategy, dedup_order_by, merge_update_columns,
  merge_exclude_columns, merge_check_columns, detect_unchanged, max_delete_fraction,
  incremental_predicates, on_key_outside_predicates, on_schema_change, merge_update_condition,
  delete_condition, soft_delete_column, soft_delete_timestamp_column, dry_run,
  merge_history_table (a table of the model's database), strategy='history' and its options
  (updated_at, hard_deletes, check_cols, late_rows, dbt_valid_to_current,
  snapshot_meta_column_names), partition_by (a column or a list; also
  read from `options`, as external models have it), compression, rows_per_file. full_merge_write
  is refused (it chooses how a table is written).
-#}
{% macro parquet_dataset_job() %}
  {% if adapter.type() != 'duckdb' %}
    {{ dbt_merge.raise_merge_error("location is set, which merges into a Parquet dataset; that needs "
        ~ "dbt-duckdb, and this target is '" ~ adapter.type() ~ "'. Remove location to merge into a table.") }}
  {% endif %}
  {#- options that describe a table: the Python side refuses them with the reason -#}
  {% do dbt_merge.check_config_keys() %}
  {% set options = config.get('options') or {} %}
  {% set partition_by = config.get('partition_by') or options.get('partition_by') %}
  {% if partition_by is string %}
    {% set partition_by = partition_by.strip('()').split(',') | map('trim') | reject('equalto', '') | list %}
  {% endif %}
  {#- the folder, as is_incremental() has it; refused before the hooks and before anything is
      written (`~user`, a glob character, a backslash: the Python side checks it too) -#}
  {% set location = dbt_merge.dataset_location() %}
  {% set has_files = dbt_merge.dataset_has_files(location) %}
  {#- a history dataset is not rebuilt by --full-refresh unless the model says full_refresh=true
      (the Python side then gets full_refresh, its request) -#}
  {% if has_files %}
    {% do dbt_merge.check_history_rebuild({'history': config.get('strategy') == 'history'},
                                          "the Parquet dataset at '" ~ location ~ "'") %}
  {% endif %}
  {#- --empty / --sample shrink the SELECT: an existing dataset is left as it is -#}
  {% set skipped = none %}
  {% if not should_full_refresh() and has_files %}
    {% set skipped = dbt_merge.shrinking_run_mode() %}
  {% endif %}
  {% set args = {
      'location': location,
      'has_files': has_files,
      'other_locations': dbt_merge.other_dataset_locations(),
      'skipped': skipped,
      'sql': sql,
      'unique_key': config.get('unique_key'),
      'strategy': config.get('strategy', 'upsert'),
      'dedup_order_by': config.get('dedup_order_by'),
      'merge_update_columns': config.get('merge_update_columns'),
      'merge_exclude_columns': config.get('merge_exclude_columns'),
      'merge_check_columns': config.get('merge_check_columns'),
      'detect_unchanged': config.get('detect_unchanged', true),
      'max_delete_fraction': config.get('max_delete_fraction'),
      'incremental_predicates': config.get('incremental_predicates') or config.get('predicates'),
      'on_key_outside_predicates': config.get('on_key_outside_predicates'),
      'on_schema_change': config.get('on_schema_change'),
      'merge_update_condition': config.get('merge_update_condition'),
      'delete_condition': config.get('delete_condition'),
      'soft_delete_column': config.get('soft_delete_column'),
      'soft_delete_timestamp_column': config.get('soft_delete_timestamp_column'),
      'dry_run': config.get('dry_run', false)
                 or var('dbt_merge_dry_run', false) in [true, 'true', 'True', 1, '1'],
      'merge_history_table': config.get('merge_history_table'),
      'updated_at': config.get('updated_at'),
      'hard_deletes': config.get('hard_deletes')
                      or ('invalidate' if config.get('invalidate_hard_deletes') is sameas true else none),
      'check_cols': config.get('check_cols'),
      'late_rows': config.get('late_rows'),
      'dbt_valid_to_current': config.get('dbt_valid_to_current'),
      'snapshot_meta_column_names': config.get('snapshot_meta_column_names'),
      'full_merge_write': config.get('full_merge_write'),
      'history': {'model_unique_id': model.unique_id, 'invocation_id': invocation_id,
                  'database': this.database, 'schema': this.schema},
      'partition_by': partition_by,
      'compression': config.get('compression') or options.get('compression'),
      'rows_per_file': config.get('rows_per_file'),
      'full_refresh': should_full_refresh(),
      'result': 'dbt_merge_parquet_' ~ local_md5(model.unique_id),
      'invocation_id': invocation_id,
      'dbt_package_version': dbt_merge.package_version(),
  } %}
  {{ return({'check_code': dbt_merge._parquet_dataset_code('check_job', args),
              'code': dbt_merge._parquet_dataset_code('run_job', args),
              'result': args.result, 'strategy': args.strategy}) }}
{% endmacro %}

{#- The Python module dbt-duckdb runs for `function` (check_job or run_job of
    dbt_merge.parquet.dbt_job) on `args`: it runs model(dbt, session); dbtObj and materialize
    are the rest of its protocol. -#}
{% macro _parquet_dataset_code(function, args) %}
  {% set code %}
import json

from dbt_merge.parquet.dbt_job import {{ function }} as job


class dbtObj:
    def __init__(self, load_df_function):
        pass


def model(dbt, session):
    job(session, json.loads({{ tojson(tojson(args)) }}))


def materialize(df, con):
    pass
  {% endset %}
  {{ return(code) }}
{% endmacro %}
