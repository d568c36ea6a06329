{#-
  Which table formats the merge can write, checked before anything runs: the model's file_format
  (what a first run or --full-refresh creates) and, on an incremental run, the format of the table
  that exists, which is what the merge writes (a table built outside dbt, or before file_format
  changed, may disagree with the config).
-#}
{% macro check_table_format(file_format, cfg) %}
  {{ return(adapter.dispatch('check_table_format', 'dbt_merge')(file_format, cfg)) }}
{% endmacro %}

{% macro default__check_table_format(file_format, cfg) %}
  {{ dbt_merge.raise_merge_error("no table formats for adapter '" ~ adapter.type() ~ "'.") }}
{% endmacro %}

{# Spark: iceberg, delta and hudi take MERGE INTO; parquet and orc tables, and Hive tables of
   parquet or orc files, get the partitions the merge touches overwritten (overwrite_partitions).
   Text formats (csv, json, text, Hive text) are refused: rewriting their untouched rows would not
   give them back as they were (csv and json keep timestamps to the millisecond, a NULL and an
   empty string can read back alike). #}
{% macro spark__check_table_format(file_format, cfg) %}
  {% set merge_formats = ['iceberg', 'delta', 'hudi'] %}
  {% set overwrite_formats = ['parquet', 'orc', 'hive'] %}
  {% if file_format not in merge_formats + overwrite_formats %}
    {{ dbt_merge.raise_merge_error("file_format '" ~ file_format ~ "' is not supported on Spark: the merge writes "
        ~ merge_formats | join(', ') ~ " tables with MERGE INTO and " ~ overwrite_formats | join(', ')
        ~ " tables by overwriting the partitions it changes. Set config(file_format=...) to one of them.") }}
  {% endif %}
  {% if file_format == 'hive' %}
    {% set stored = namespace(format='') %}
    {% for key, value in (config.get('options') or {}).items() if key | lower == 'fileformat' %}
      {% set stored.format = value | string | lower %}
    {% endfor %}
    {% if stored.format not in ['parquet', 'orc'] %}
      {{ dbt_merge.raise_merge_error("file_format 'hive' creates a Hive table of text files unless "
          ~ "options={'fileFormat': 'parquet'} (or 'orc') is set, and the merge rewrites only parquet and orc "
          ~ "files. Add options={'fileFormat': 'parquet'} to the model's config.") }}
    {% endif %}
  {% endif %}

  {% set existing = load_cached_relation(this) %}
  {% if existing is none or existing.is_view or should_full_refresh() %}
    {% if not config.get('file_format') %}
      {#- no file_format: say what the build makes and what that means for the merges -#}
      {% set default_source = dbt_merge.default_data_source() | lower %}
      {% do dbt_merge._log_table_format(default_source, default_source in merge_formats, 'built as a') %}
    {% endif %}
    {{ return(none) }}
  {% endif %}
  {% set storage = dbt_merge.table_storage(existing) %}
  {#- read once: the write (spark__apply_changes) takes it from the plan -#}
  {% do cfg.update({'target_storage': storage}) %}
  {% set described = storage.format if storage.provider in [storage.format, ''] else storage.provider ~ ' ' ~ storage.format %}
  {% if storage.write is none %}
    {{ dbt_merge.raise_merge_error("the table " ~ existing ~ " is stored as " ~ described ~ ", which the merge can "
        ~ "neither MERGE INTO nor overwrite by partition (it writes " ~ merge_formats | join(', ')
        ~ ", parquet and orc tables). Run with --full-refresh to rebuild it as file_format '" ~ file_format
        ~ "'. The target was not changed.") }}
  {% endif %}
  {% if cfg.strategy == 'full_merge' and cfg.full_merge_write == 'merge' and storage.write != 'merge' %}
    {{ dbt_merge.raise_merge_error("full_merge_write 'merge' asks for MERGE INTO, but " ~ existing ~ " is a "
        ~ described ~ " table, which has none: the merge overwrites the partitions it changes. Remove "
        ~ "full_merge_write or set it to 'auto'. The target was not changed.") }}
  {% endif %}
  {% if cfg.strategy == 'full_merge' and cfg.full_merge_write == 'overwrite' and storage.provider == 'hudi' %}
    {{ dbt_merge.raise_merge_error("full_merge_write 'overwrite' is supported on Iceberg and Delta tables; "
        ~ existing ~ " is a hudi table, written with MERGE INTO. Remove full_merge_write or set it to 'auto'. "
        ~ "The target was not changed.") }}
  {% endif %}
  {% if storage.write == 'overwrite' and cfg.on_schema_change == 'sync_all_columns' %}
    {{ dbt_merge.raise_merge_error("on_schema_change 'sync_all_columns' cannot be applied to " ~ existing ~ ", a "
        ~ described ~ " table: Spark drops and retypes columns only in tables with MERGE INTO ("
        ~ merge_formats | join(', ') ~ "). Use on_schema_change='append_new_columns', or --full-refresh. "
        ~ "The target was not changed.") }}
  {% endif %}
  {% set v3_cow = storage.provider == 'iceberg' and (storage.format_version or 0) >= 3 and not storage.merge_on_read %}
  {% set extensions = dbt_merge.iceberg_extensions() if v3_cow else true %}
  {% if v3_cow and extensions is none %}
    {{ dbt_merge.raise_merge_error("the table " ~ existing ~ " is an Iceberg table of format version "
        ~ storage.format_version ~ " written copy-on-write, which Spark can MERGE into only with Iceberg's SQL "
        ~ "extensions in the session, and this session shows spark.sql.extensions redacted "
        ~ "(spark.sql.redaction.options.regex matches its name or value), so the merge cannot tell whether it "
        ~ "has them. Narrow the regex so that it matches neither, for the session that runs the merge, then "
        ~ "run it again. The target was not changed.") }}
  {% endif %}
  {% if v3_cow and not extensions %}
    {#- Spark 3.5 + Iceberg 1.10: a copy-on-write MERGE into a v3 table must carry its rows'
        lineage, which only Iceberg's SQL extensions plan; without them every such write fails
        in its tasks ('Structs do not match') -#}
    {{ dbt_merge.raise_merge_error("the table " ~ existing ~ " is an Iceberg table of format version "
        ~ storage.format_version ~ " written copy-on-write, and Spark can MERGE into it only with Iceberg's SQL "
        ~ "extensions in the session (without them the write fails in Spark's tasks). Add "
        ~ "spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions to the "
        ~ "session (the profile's server_side_parameters), or make the table merge-on-read "
        ~ "(tblproperties write.merge.mode=merge-on-read). The target was not changed.") }}
  {% endif %}
  {% if storage.provider == 'iceberg' and storage.merge_on_read and storage.format_version == 1 %}
    {#- Iceberg writes no delete files into a format 1 table: every MERGE (each has a WHEN MATCHED
        clause) would fail in Spark with 'Deletes are supported in V2 and above' -#}
    {{ dbt_merge.raise_merge_error("the table " ~ existing ~ " is an Iceberg table of format version 1 with "
        ~ "write.merge.mode=merge-on-read, which Iceberg cannot write (delete files need format version 2 or "
        ~ "later). Upgrade the table (alter table " ~ existing ~ " set tblproperties ('format-version'='2')), or set "
        ~ "write.merge.mode, write.update.mode and write.delete.mode to copy-on-write. The target was not changed.") }}
  {% endif %}
  {% if storage.write == 'overwrite' %}
    {#- the partition rewrite knows insert, update, delete and unchanged rows only -#}
    {% for option, value in [('merge_update_condition', cfg.update_condition), ('delete_condition', cfg.delete_condition),
                             ('soft_delete_column', cfg.soft_delete)] if value %}
      {{ dbt_merge.raise_merge_error(option ~ " is not supported yet on tables without MERGE INTO (" ~ existing
          ~ " is a " ~ described ~ " table). Use an Iceberg or Delta table (file_format='iceberg', then "
          ~ "--full-refresh). The target was not changed.") }}
    {% endfor %}
  {% endif %}
  {% if not config.get('file_format') %}
    {% do dbt_merge._log_table_format(described, storage.write == 'merge', 'a') %}
  {% elif storage.provider != file_format %}
    {% do log('dbt_merge ' ~ model.name ~ ': ' ~ existing ~ ' is a ' ~ described ~ ' table but file_format is '
        ~ file_format ~ ': it is merged as the table it is ('
        ~ ('MERGE INTO' if storage.write == 'merge' else 'partition overwrite')
        ~ '); --full-refresh rebuilds it as ' ~ file_format ~ '.', info=true) %}
  {% endif %}
{% endmacro %}

{#- The line a model without file_format gets, on every run: the table's format and whether its
    merges are atomic (a parquet, orc or Hive table is rewritten partition by partition). -#}
{% macro _log_table_format(described, atomic, verb) %}
  {% do log('dbt_merge ' ~ model.name ~ ': no file_format is set: the table is ' ~ verb ~ ' ' ~ described
      ~ (' table, merged by MERGE INTO, one atomic commit.' if atomic else
         ' table (spark.sql.sources.default), merged by rewriting the partitions it changes: not atomic '
         ~ '(a reader may see a partition missing or half-written while it runs). Set file_format=\'iceberg\' '
         ~ 'for atomic merges.'), info=true) %}
{% endmacro %}

{#- Spark: the session's default data source (spark.sql.sources.default), which a model without
    file_format is built as. Refused before anything is made when the session shows it redacted
    (spark.sql.redaction.options.regex matches the key or the value): the CREATE would name
    '*********(redacted)' (Spark's raw parse error, after a full refresh had dropped the old
    parquet table). -#}
{% macro default_data_source() %}
  {% set read = dbt_merge.session_setting('spark.sql.sources.default') %}
  {% if read.redacted %}
    {{ dbt_merge.raise_merge_error("no file_format is set, so the table is built as the session's default "
        ~ "data source (spark.sql.sources.default), which this session shows redacted "
        ~ "(spark.sql.redaction.options.regex matches it). Set file_format (e.g. file_format='iceberg', "
        ~ "or 'parquet'), then run it again. The target was not changed.") }}
  {% endif %}
  {{ return(read.value | trim) }}
{% endmacro %}
