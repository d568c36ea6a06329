{#-
  The config keys the merge materialization reads (or reserves). check_config_keys warns on a
  model config key that is in none of: this list, dbt's own node config, the adapters' keys.
  Add a key here when a macro starts reading it.
-#}
{% macro merge_config_keys() %}
  {{ return([
    'strategy', 'unique_key', 'dedup_order_by', 'merge_update_columns', 'merge_exclude_columns',
    'incremental_predicates', 'predicates', 'on_schema_change', 'max_delete_fraction',
    'on_key_outside_predicates', 'merge_check_columns', 'detect_unchanged',
    'merge_update_condition', 'delete_condition', 'soft_delete_column',
    'soft_delete_timestamp_column', 'dry_run', 'merge_history_table', 'full_merge_write',
    'location', 'partition_by', 'compression', 'rows_per_file',
    'updated_at', 'hard_deletes', 'invalidate_hard_deletes', 'check_cols', 'dbt_valid_to_current',
    'snapshot_meta_column_names', 'late_rows',
  ]) }}
{% endmacro %}
