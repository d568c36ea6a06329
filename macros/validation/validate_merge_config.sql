{#-
  Read and check the model's merge config before any SQL runs. Returns a dict:
    strategy, actions (from merge_strategies), unique_key, dedup_order_by (raw terms),
    update_columns, exclude_columns, predicates, on_schema_change, max_delete_fraction,
    key_outside_predicates, check_columns, detect_unchanged, update_condition, delete_condition,
    soft_delete ({column, timestamp_column} or none), dry_run, history_table, full_merge_write,
    history (strategy='history': validate_history_config's result, else none).
  Column names are checked against the data later (resolve_merge_columns), once it exists.
-#}
{% macro validate_merge_config() %}
  {#- first: a misspelt key (unique_keys, stratgy) is the real cause of what follows -#}
  {% do dbt_merge.check_config_keys() %}
  {% set strategies = dbt_merge.merge_strategies() %}
  {% set strategy = config.get('strategy', 'upsert') %}
  {% if strategy not in strategies %}
    {{ dbt_merge.raise_merge_error("strategy '" ~ strategy ~ "' is not one of: "
        ~ strategies.keys() | join(', ') ~ ". Set config(strategy=...) to one of them.") }}
  {% endif %}

  {% set unique_key = dbt_merge.as_list(config.get('unique_key')) %}
  {% if unique_key | length == 0 %}
    {{ dbt_merge.raise_merge_error("unique_key is missing or empty. Set config(unique_key='id') "
        ~ "or a list of columns, e.g. unique_key=['customer_id', 'region'].") }}
  {% endif %}
  {% if unique_key | map('lower') | unique | list | length != unique_key | length %}
    {{ dbt_merge.raise_merge_error("unique_key " ~ unique_key | join(', ')
        ~ " names a column twice. List each key column once.") }}
  {% endif %}

  {#- strategy='history': its own options, and the other strategies' it refuses -#}
  {% set history = dbt_merge.validate_history_config(strategy) %}
  {% set actions = {} %}
  {% do actions.update(strategies[strategy]) %}

  {% set order_by = dbt_merge.as_list(config.get('dedup_order_by')) %}
  {% if order_by and not strategies[strategy]['dedupe'] and strategy != 'history' %}
    {{ dbt_merge.raise_merge_error("dedup_order_by is set but strategy is '" ~ strategy
        ~ "'; it is only used by strategies 'deduplicate' and 'history'. Remove dedup_order_by or set "
        ~ "strategy='deduplicate'.") }}
  {% endif %}
  {% if history %}
    {#- a history merge keeps one row per key when dedup_order_by says which; closes keys the
        SELECT lacks with hard_deletes -#}
    {% do actions.update({'dedupe': order_by | length > 0,
                          'target_only': 'keep' if history.hard_deletes == 'ignore' else 'delete'}) %}
  {% endif %}

  {% set update_columns = config.get('merge_update_columns') %}
  {% set exclude_columns = config.get('merge_exclude_columns') %}
  {% if update_columns is not none and exclude_columns is not none %}
    {{ dbt_merge.raise_merge_error("merge_update_columns and merge_exclude_columns are both set. Set only one of them.") }}
  {% endif %}

  {% set on_schema_change = config.get('on_schema_change') or 'ignore' %}
  {% set schema_modes = ['ignore', 'fail', 'append_new_columns', 'sync_all_columns'] %}
  {% if on_schema_change not in schema_modes %}
    {{ dbt_merge.raise_merge_error("on_schema_change '" ~ on_schema_change ~ "' is not one of: "
        ~ schema_modes | join(', ') ~ ".") }}
  {% endif %}

  {% set predicates = dbt_merge.as_list(config.get('incremental_predicates') or config.get('predicates')) %}
  {% for predicate in predicates %}
    {% if dbt_merge.names_alias(predicate, 'DBT_INTERNAL_SOURCE') %}
      {{ dbt_merge.raise_merge_error("incremental_predicates condition '" ~ predicate ~ "' names DBT_INTERNAL_SOURCE. "
          ~ "The predicates narrow the target only (which target rows may be matched, updated or deleted), so "
          ~ "they may name target columns as DBT_INTERNAL_DEST.<column> and nothing of the SELECT. Filter the "
          ~ "SELECT itself in the model's SQL instead.") }}
    {% endif %}
  {% endfor %}

  {#- full_merge refuses to delete more than this fraction of the target rows it considers. -#}
  {% set max_delete_fraction = config.get('max_delete_fraction', 0.5) %}
  {% if max_delete_fraction is not number or max_delete_fraction is sameas true or max_delete_fraction is sameas false
        or max_delete_fraction < 0 or max_delete_fraction > 1 %}
    {{ dbt_merge.raise_merge_error("max_delete_fraction " ~ max_delete_fraction ~ " is not a number from 0 to 1. "
        ~ "Set it to the largest fraction of the target's rows a full_merge may delete (default 0.5; 1 allows any delete).") }}
  {% endif %}

  {#- A SELECT row whose key exists in the target only outside incremental_predicates. -#}
  {% set key_outside = config.get('on_key_outside_predicates') or 'fail' %}
  {% if key_outside not in ['fail', 'insert'] %}
    {{ dbt_merge.raise_merge_error("on_key_outside_predicates '" ~ key_outside ~ "' is not one of: fail, insert.") }}
  {% endif %}

  {#- Change detection (issue: what "unchanged" means): merge_check_columns narrows the columns
      compared; detect_unchanged=false compares nothing (every matched row is updated). -#}
  {% set check_columns = config.get('merge_check_columns') %}
  {% set detect_unchanged = config.get('detect_unchanged', true) %}
  {% if detect_unchanged not in [true, false] %}
    {{ dbt_merge.raise_merge_error("detect_unchanged " ~ detect_unchanged ~ " is not true or false.") }}
  {% endif %}
  {% if check_columns is not none and not detect_unchanged %}
    {{ dbt_merge.raise_merge_error("merge_check_columns and detect_unchanged=false are both set; "
        ~ "detect_unchanged=false compares no column. Set only one of them.") }}
  {% endif %}
  {% if check_columns is not none and dbt_merge.as_list(check_columns) | length == 0 %}
    {{ dbt_merge.raise_merge_error("merge_check_columns is empty. List the columns whose change marks a row as "
        ~ "changed (e.g. ['updated_at']), or remove it to compare every update column.") }}
  {% endif %}

  {#- Conditional merges: raw SQL, like incremental_predicates; checked against the columns later. -#}
  {% set update_condition = config.get('merge_update_condition') %}
  {% set delete_condition = config.get('delete_condition') %}
  {% for option, value in [('merge_update_condition', update_condition), ('delete_condition', delete_condition)] %}
    {% if value is not none and (value is not string or not value | trim) %}
      {{ dbt_merge.raise_merge_error(option ~ " must be a SQL condition (a non-empty string), got " ~ value ~ ".") }}
    {% endif %}
  {% endfor %}
  {% if update_condition and strategies[strategy].matched != 'update' %}
    {{ dbt_merge.raise_merge_error("merge_update_condition is set but strategy '" ~ strategy ~ "' never updates a "
        ~ "row. Use strategy upsert, update, full_merge or deduplicate, or remove merge_update_condition.") }}
  {% endif %}
  {% if delete_condition and strategy == 'insert' %}
    {{ dbt_merge.raise_merge_error("delete_condition is set but strategy 'insert' never deletes. Use strategy "
        ~ "upsert, update, full_merge or deduplicate, or remove delete_condition.") }}
  {% endif %}
  {% if delete_condition and dbt_merge.names_alias(delete_condition, 'DBT_INTERNAL_DEST') %}
    {{ dbt_merge.raise_merge_error("delete_condition '" ~ delete_condition ~ "' names DBT_INTERNAL_DEST; it is a "
        ~ "condition on the SELECT's row only (DBT_INTERNAL_SOURCE.<column>), e.g. DBT_INTERNAL_SOURCE.op = 'D'.") }}
  {% endif %}

  {#- Soft deletes: a boolean column set to true instead of deleting the row. -#}
  {% set soft_column = config.get('soft_delete_column') %}
  {% set soft_ts_column = config.get('soft_delete_timestamp_column') %}
  {#- each a column name: a number, list or mapping built a column named '1' or "['a']", and ''
      turned soft deletes off, its rows deleted (red team helper-77) -#}
  {% for option, value in [('soft_delete_column', soft_column), ('soft_delete_timestamp_column', soft_ts_column)] %}
    {% if value is not none and (value is not string or not value | trim) %}
      {{ dbt_merge.raise_merge_error(option ~ " must be a column name (a non-empty string), got "
          ~ (value | tojson if value is string else value) ~ ". Name the column, or leave " ~ option ~ " unset.") }}
    {% endif %}
    {#- the key: a soft delete set the key of the row it marked to true, or marked nothing and
        reported success (red team helper-77) -#}
    {% if value is not none and value | lower in unique_key | map('lower') | list %}
      {{ dbt_merge.raise_merge_error(option ~ " '" ~ value ~ "' names a unique_key column (the merge matches column "
          ~ "names ignoring case): a key identifies the row, so it cannot also mark its deletion. Name a column "
          ~ "of its own.") }}
    {% endif %}
  {% endfor %}
  {% if soft_ts_column and not soft_column %}
    {{ dbt_merge.raise_merge_error("soft_delete_timestamp_column is set without soft_delete_column. Set "
        ~ "soft_delete_column (the boolean column) too.") }}
  {% endif %}
  {#- one column for both (or two a merge takes for one, 'del' and 'DEL'): a first run built the
      second as 'del_1', or built both 'Ä' and 'ä' and every later run was refused for them (red
      team helper-76) -#}
  {% if soft_column and soft_ts_column and soft_column | lower == soft_ts_column | lower %}
    {{ dbt_merge.raise_merge_error("soft_delete_column '" ~ soft_column ~ "' and soft_delete_timestamp_column '"
        ~ soft_ts_column ~ "' name one column (the merge matches column names ignoring case): one is the boolean "
        ~ "flag, the other the time of the delete. Give each its own column.") }}
  {% endif %}
  {% if soft_column and not (strategy == 'full_merge' or delete_condition) %}
    {{ dbt_merge.raise_merge_error("soft_delete_column is set, but strategy '" ~ strategy ~ "' deletes nothing "
        ~ "without delete_condition. Use strategy='full_merge' or set delete_condition.") }}
  {% endif %}

  {#- How full_merge writes a table with MERGE INTO (Spark: Iceberg, Delta): chosen from the counts
      ('auto'), or always one MERGE INTO, or always an INSERT OVERWRITE of the merged table (see
      choose_full_merge_write). Other strategies ignore it, so a project may set it for every model. -#}
  {% set full_merge_write = config.get('full_merge_write') or 'auto' %}
  {% set write_modes = ['auto', 'merge', 'overwrite'] %}
  {% if full_merge_write not in write_modes %}
    {{ dbt_merge.raise_merge_error("full_merge_write '" ~ full_merge_write ~ "' is not one of: "
        ~ write_modes | join(', ') ~ ".") }}
  {% endif %}

  {#- Dry run: every check and the exact counts, nothing written. -#}
  {% set dry_run = config.get('dry_run', false) or var('dbt_merge_dry_run', false) in [true, 'true', 'True', 1, '1'] %}

  {% set cfg = {
    'strategy': strategy,
    'actions': actions,
    'unique_key': unique_key,
    'dedup_order_by': order_by,
    'update_columns': dbt_merge.as_list(update_columns) if update_columns is not none else none,
    'exclude_columns': dbt_merge.as_list(exclude_columns),
    'predicates': predicates,
    'on_schema_change': on_schema_change,
    'max_delete_fraction': max_delete_fraction,
    'key_outside_predicates': key_outside,
    'check_columns': dbt_merge.as_list(check_columns) if check_columns is not none and not history else none,
    'detect_unchanged': detect_unchanged,
    'update_condition': update_condition | trim if update_condition else none,
    'delete_condition': delete_condition | trim if delete_condition else none,
    'soft_delete': {'column': soft_column, 'timestamp_column': soft_ts_column or none} if soft_column else none,
    'dry_run': dry_run,
    'history_table': config.get('merge_history_table'),
    'full_merge_write': full_merge_write,
    'history': history,
  } %}
  {#- a refused rebuild of a history table, before the engine's checks change anything -#}
  {% do dbt_merge.check_history_rebuild(cfg) %}
  {% do dbt_merge.validate_engine_config(cfg) %}
  {{ return(cfg) }}
{% endmacro %}
