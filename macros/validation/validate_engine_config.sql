{#- Engine-specific config checks. Engines we have not verified raise instead of guessing. -#}
{% macro validate_engine_config(cfg) %}
  {{ return(adapter.dispatch('validate_engine_config', 'dbt_merge')(cfg)) }}
{% endmacro %}

{% macro default__validate_engine_config(cfg) %}
  {{ dbt_merge.raise_merge_error("the merge materialization supports duckdb and spark; this target is '"
      ~ adapter.type() ~ "'.") }}
{% endmacro %}

{% macro duckdb__validate_engine_config(cfg) %}
{% endmacro %}

{# Spark can MERGE only into table formats that implement row-level operations. #}
{% macro spark__validate_engine_config(cfg) %}
  {% set merge_formats = ['iceberg', 'delta', 'hudi'] %}
  {% set file_format = config.get('file_format') or 'parquet' %}
  {% if file_format not in merge_formats %}
    {{ dbt_merge.raise_merge_error("file_format '" ~ file_format ~ "' does not support MERGE on Spark. "
        ~ "Set config(file_format=...) to one of: " ~ merge_formats | join(', ') ~ ".") }}
  {% endif %}
{% endmacro %}
