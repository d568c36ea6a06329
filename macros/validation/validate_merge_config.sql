{#-
  Read and check the model's merge config before any SQL runs. Returns a dict:
    strategy, actions (from merge_strategies), unique_key, dedup_order_by (raw terms),
    update_columns, exclude_columns, predicates, on_schema_change.
  Column names are checked against the data later (resolve_merge_columns), once it exists.
-#}
{% macro validate_merge_config() %}
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

  {% set order_by = dbt_merge.as_list(config.get('dedup_order_by')) %}
  {% if order_by and not strategies[strategy]['dedupe'] %}
    {{ dbt_merge.raise_merge_error("dedup_order_by is set but strategy is '" ~ strategy
        ~ "'; it is only used by strategy 'deduplicate'. Remove dedup_order_by or set strategy='deduplicate'.") }}
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

  {% set cfg = {
    'strategy': strategy,
    'actions': strategies[strategy],
    'unique_key': unique_key,
    'dedup_order_by': order_by,
    'update_columns': dbt_merge.as_list(update_columns) if update_columns is not none else none,
    'exclude_columns': dbt_merge.as_list(exclude_columns),
    'predicates': predicates,
    'on_schema_change': on_schema_change,
  } %}
  {% do dbt_merge.validate_engine_config(cfg) %}
  {{ return(cfg) }}
{% endmacro %}
