{#-
  merge_history_table: append one row per merge (model, strategy, invocation, start and end, the
  counts) to a table created on first use, in the model's schema unless the name is qualified
  ('schema.table' or 'database.schema.table'). Several models may share one history table. A
  history merge (strategy='history') also writes its versions (column `versions`, NULL for the
  other strategies; added to a table made before it had one).
  DuckDB writes the row in the merge's own transaction: it exists exactly when the merge
  committed. Spark writes it after the MERGE has committed (Iceberg has no multi-table
  transaction): a failure in between leaves a committed merge without its history row, never a
  row for a merge that did not commit.
-#}
{% macro record_merge_history(name, target, strategy, stats, started_at) %}
  {% set relation = dbt_merge._history_relation(name, target) %}
  {% set finished_at = modules.datetime.datetime.utcnow() %}
  {% do dbt_merge.run_statement(dbt_merge._create_history_sql(relation), 'dbt_merge_history') %}
  {% set values = [
      dbt_merge._sql_string(model.unique_id), dbt_merge._sql_string(strategy), dbt_merge._sql_string(invocation_id),
      "cast('" ~ started_at.strftime('%Y-%m-%d %H:%M:%S.%f') ~ "' as timestamp)",
      "cast('" ~ finished_at.strftime('%Y-%m-%d %H:%M:%S.%f') ~ "' as timestamp)",
      stats.inserted, stats.updated, stats.deleted, stats.unchanged,
      stats.held_back if stats.held_back is defined else 'null', stats.total] %}
  {% set columns = dbt_merge._history_columns() | map('first') | list %}
  {% if dbt_merge._history_writes_versions(relation, stats) %}
    {% do columns.append('versions') %}
    {% do values.append(stats.versions if stats.versions is defined else 'null') %}
  {% endif %}
  {% do dbt_merge.run_statement('insert into ' ~ relation ~ ' (' ~ dbt_merge.column_list(columns)
      ~ ') values (' ~ values | join(', ') ~ ')', 'dbt_merge_history') %}
{% endmacro %}

{#- Whether the row names column `versions`, which tables made by releases before
    strategy='history' lack: a history merge adds it to such a table. DuckDB fills a column an
    INSERT leaves out with NULL; Spark's parquet tables refuse such an INSERT, so there the row
    names every column the table has (one DESCRIBE). -#}
{% macro _history_writes_versions(relation, stats) %}
  {{ return(adapter.dispatch('_history_writes_versions', 'dbt_merge')(relation, stats)) }}
{% endmacro %}

{% macro default___history_writes_versions(relation, stats) %}
  {% if stats.versions is defined %}
    {% do dbt_merge._add_versions_column(relation) %}
  {% endif %}
  {{ return(stats.versions is defined) }}
{% endmacro %}

{% macro spark___history_writes_versions(relation, stats) %}
  {% if stats.versions is defined %}
    {% do dbt_merge._add_versions_column(relation) %}
    {{ return(true) }}
  {% endif %}
  {{ return(dbt_merge._find_column('versions', dbt_merge.relation_columns(relation) | map(attribute='name') | list) is not none) }}
{% endmacro %}

{% macro _add_versions_column(relation) %}
  {% if dbt_merge._find_column('versions', dbt_merge.relation_columns(relation) | map(attribute='name') | list) is none %}
    {% do dbt_merge.alter_target_columns(relation, add=[api.Column.create('versions', 'bigint')], remove=[], retype=[]) %}
  {% endif %}
{% endmacro %}

{#- The history table's relation: 'table', 'schema.table' or 'database.schema.table', the rest
    taken from the target. -#}
{% macro _history_relation(name, target) %}
  {% set parts = name.split('.') %}
  {{ return(api.Relation.create(
        database=parts[-3] if parts | length > 2 else target.database,
        schema=parts[-2] if parts | length > 1 else target.schema,
        identifier=parts[-1], type='table')) }}
{% endmacro %}

{#- (column, type) of the history table. -#}
{% macro _history_columns() %}
  {{ return([
      ('model_unique_id', dbt_merge._history_type('string')), ('strategy', dbt_merge._history_type('string')),
      ('invocation_id', dbt_merge._history_type('string')), ('started_at', 'timestamp'), ('finished_at', 'timestamp'),
      ('inserted', 'bigint'), ('updated', 'bigint'), ('deleted', 'bigint'), ('unchanged', 'bigint'),
      ('held_back', 'bigint'), ('total', 'bigint')]) }}
{% endmacro %}

{#- CREATE TABLE IF NOT EXISTS of the history table. -#}
{% macro _create_history_sql(relation) %}
  {% set definitions = [] %}
  {% for column, data_type in dbt_merge._history_columns() + [('versions', 'bigint')] %}
    {% do definitions.append(dbt_merge.quote_identifier(column) ~ ' ' ~ data_type) %}
  {% endfor %}
  {{ return('create table if not exists ' ~ relation ~ ' (' ~ definitions | join(', ') ~ ')'
      ~ dbt_merge._history_table_options()) }}
{% endmacro %}

{#- Adds column `versions` to a history table made before it had one (DuckDB: run before the
    merge's transaction, dbt_merge.duckdb.history). -#}
{% macro _history_add_versions_sql(relation) %}
  {{ return('alter table ' ~ relation ~ ' add column if not exists ' ~ dbt_merge.quote_identifier('versions') ~ ' bigint') }}
{% endmacro %}

{#- A SQL string literal. -#}
{% macro _sql_string(value) %}
  {{ return(adapter.dispatch('_sql_string', 'dbt_merge')(value)) }}
{% endmacro %}

{% macro default___sql_string(value) %}
  {{ return("'" ~ (value | string | replace("'", "''")) ~ "'") }}
{% endmacro %}

{# Spark reads '' inside a literal as two adjacent literals; it escapes with a backslash. #}
{% macro spark___sql_string(value) %}
  {{ return("'" ~ (value | string | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'") }}
{% endmacro %}

{% macro _history_type(logical) %}
  {{ return(adapter.dispatch('_history_type', 'dbt_merge')(logical)) }}
{% endmacro %}

{% macro default___history_type(logical) %}
  {{ return('varchar' if logical == 'string' else logical) }}
{% endmacro %}

{% macro spark___history_type(logical) %}
  {{ return(logical) }}
{% endmacro %}

{#- Spark: the history table in the model's table format when it is one with atomic appends. -#}
{% macro _history_table_options() %}
  {{ return(adapter.dispatch('_history_table_options', 'dbt_merge')()) }}
{% endmacro %}

{% macro default___history_table_options() %}
  {{ return('') }}
{% endmacro %}

{% macro spark___history_table_options() %}
  {% set file_format = (config.get('file_format') or 'parquet') | lower %}
  {{ return(' using ' ~ (file_format if file_format in ['iceberg', 'delta'] else 'parquet')) }}
{% endmacro %}
