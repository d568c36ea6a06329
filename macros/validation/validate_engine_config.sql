{#- Engine-specific config checks. Engines we have not verified raise instead of guessing. -#}
{% macro validate_engine_config(cfg) %}
  {{ return(adapter.dispatch('validate_engine_config', 'dbt_merge')(cfg)) }}
{% endmacro %}

{% macro default__validate_engine_config(cfg) %}
  {{ dbt_merge.raise_merge_error("the merge materialization supports duckdb and spark; this target is '"
      ~ adapter.type() ~ "'.") }}
{% endmacro %}

{# DuckDB: full_merge deletes and inserts in the model's transaction; it has no whole-table
   replacement to force. The history row is written in that transaction too, and a DuckDB
   transaction writes to one attached database only. #}
{% macro duckdb__validate_engine_config(cfg) %}
  {% if cfg.strategy == 'full_merge' and cfg.full_merge_write == 'overwrite' %}
    {{ dbt_merge.raise_merge_error("full_merge_write 'overwrite' is supported on Spark (Iceberg and Delta tables) "
        ~ "only; on duckdb full_merge always deletes and inserts in one transaction. Remove full_merge_write "
        ~ "or set it to 'auto'.") }}
  {% endif %}
  {% if cfg.history_table %}
    {% set history = dbt_merge.merge_history_relation(cfg.history_table, this) %}
    {% if (history.database or '') | lower != (this.database or '') | lower %}
      {{ dbt_merge.raise_merge_error("merge_history_table '" ~ cfg.history_table ~ "' is in the database '"
          ~ history.database ~ "', but the model's table is in '" ~ this.database ~ "': DuckDB writes the "
          ~ "history row in the merge's own transaction, and a transaction writes to one attached database "
          ~ "only. Put the history table in '" ~ this.database ~ "' (name it 'table' or 'schema.table'). "
          ~ "The target was not changed.") }}
    {% endif %}
  {% endif %}
{% endmacro %}

{# Spark: which table formats the merge writes, and how: see check_table_format. Then, before
   anything reads the target, a write that an interrupted run left unfinished is finished. #}
{% macro spark__validate_engine_config(cfg) %}
  {#- the history table's name, refused now if it is not one (no statement) -#}
  {% if cfg.history_table %}
    {% do dbt_merge.merge_history_relation(cfg.history_table, this) %}
  {% endif %}
  {% do dbt_merge.check_table_format(config.get('file_format') or 'parquet', cfg) %}
  {% do dbt_merge.finish_interrupted_write(load_cached_relation(this), dry_run=cfg.dry_run, storage=cfg.get('target_storage')) %}
{% endmacro %}
