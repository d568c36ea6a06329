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
  {% set relation = dbt_merge.merge_history_relation(name, target) %}
  {% set finished_at = modules.datetime.datetime.utcnow() %}
  {% do dbt_merge.run_statement(dbt_merge.create_merge_history_sql(relation), 'dbt_merge_history') %}
  {% set values = [
      dbt_merge.sql_string(model.unique_id), dbt_merge.sql_string(strategy), dbt_merge.sql_string(invocation_id),
      "cast('" ~ started_at.strftime('%Y-%m-%d %H:%M:%S.%f') ~ "' as timestamp)",
      "cast('" ~ finished_at.strftime('%Y-%m-%d %H:%M:%S.%f') ~ "' as timestamp)",
      stats.inserted, stats.updated, stats.deleted, stats.unchanged,
      stats.held_back if stats.held_back is defined else 'cast(null as bigint)', stats.total] %}
  {% set columns = dbt_merge.merge_history_columns() | map('first') | list %}
  {% if dbt_merge._history_writes_versions(relation, stats) %}
    {% do columns.append('versions') %}
    {% do values.append(stats.versions if stats.versions is defined else 'cast(null as bigint)') %}
  {% endif %}
  {% do dbt_merge.run_statement('insert into ' ~ relation ~ ' (' ~ dbt_merge.column_list(columns)
      ~ ') values (' ~ values | join(', ') ~ ')', 'dbt_merge_history') %}
{% endmacro %}

{#- merge_history_table, checked before anything is written: a table the history row can be
    appended to, or none yet (created when the row is written). Spark writes the row after the
    merge's commit, so a history table the INSERT fails on (a view, a table lacking a history
    column) failed the run after the target was merged: the run reported an error for a merge
    that had been written. DuckDB checks it where it is created, on a cursor of its own
    (merge_history_job, dbt_merge.duckdb.history.check). -#}
{% macro check_history_table(name, target) %}
  {{ return(adapter.dispatch('check_history_table', 'dbt_merge')(name, target)) }}
{% endmacro %}

{% macro default__check_history_table(name, target) %}
{% endmacro %}

{#- Spark: `show tables` finds it (not a temporary view of its name, which its qualified name
    does not reach), `describe table extended` (table_storage) says whether it is a view and
    gives its columns and their types: exactly the history row's (`versions` may be missing: it
    is added), each of the type the row writes (a timestamp may be without time zone). Two
    statements, only for a model with merge_history_table. -#}
{% macro spark__check_history_table(name, target) %}
  {% set relation = dbt_merge.merge_history_relation(name, target) %}
  {% set in_schema = relation.schema if relation.database is none else relation.database ~ '.' ~ relation.schema %}
  {% set listed = dbt_merge.run_sql("show tables in " ~ in_schema ~ " like '" ~ relation.identifier ~ "'", 'dbt_merge_history_check') %}
  {% set found = [] %}
  {% for row in listed.rows if (row[1] | lower) == (relation.identifier | lower) and (row[2] | string | lower) != 'true' %}
    {% do found.append(row) %}
  {% endfor %}
  {% if not found %}
    {{ return(none) }}
  {% endif %}
  {% set said = "merge_history_table '" ~ name ~ "'" %}
  {% set storage = dbt_merge.table_storage(relation) %}
  {% set columns = storage.columns %}
  {% set types = storage.types %}
  {% if storage.kind == 'VIEW' %}
    {{ dbt_merge.raise_merge_error(said ~ " names a view (" ~ relation ~ "), not a table: the merge appends one "
        ~ "row per merge to a table, created on first use. Name another table, or drop the view. The target was "
        ~ "not changed.") }}
  {% endif %}
  {% set have = columns | map('lower') | list %}
  {% set missing = [] %}
  {% for column in dbt_merge.merge_history_columns() | map('first') if column not in have %}
    {% do missing.append(column) %}
  {% endfor %}
  {% if missing %}
    {{ dbt_merge.raise_merge_error(said ~ " (" ~ relation ~ ") is not a merge history table: it lacks the column(s) "
        ~ missing | join(', ') ~ " (a history table has: " ~ dbt_merge.merge_history_columns() | map('first') | join(', ')
        ~ "; it holds: " ~ columns | join(', ') ~ "). Name another table (created on first use), or drop or rename "
        ~ "this one. The target was not changed.") }}
  {% endif %}
  {#- the row's values as the INSERT writes them (Spark refuses a column of another type, a
      varchar(n), a column the INSERT leaves out that cannot be NULL: after the commit) -#}
  {% set expected = dict(dbt_merge.merge_history_columns() + [('versions', 'bigint')]) %}
  {% set accepted = {'string': ['string'], 'timestamp': ['timestamp', 'timestamp_ntz', 'timestamp_ltz'],
                     'bigint': ['bigint']} %}
  {% set wrong = [] %}
  {% for column in columns %}
    {% set wanted = expected.get(column | lower) %}
    {% if wanted is none %}
      {% do wrong.append(column ~ ' (no column of a history row)') %}
    {% elif types[column | lower] not in accepted[wanted] %}
      {% do wrong.append(column ~ ' ' ~ types[column | lower] ~ ' (the row writes ' ~ wanted ~ ')') %}
    {% endif %}
  {% endfor %}
  {#- an Iceberg column may be required (NOT NULL), which DESCRIBE does not say: the row leaves
      held_back and versions NULL where they do not apply (one statement more, Iceberg only) -#}
  {% if storage.provider == 'iceberg' %}
    {% set created = dbt_merge.run_sql('show create table ' ~ relation, 'dbt_merge_history_check').rows[0][0] | string %}
    {% for line in created.split('\n') %}
      {% set required = modules.re.match('\\s*`?([A-Za-z0-9_]+)`?\\s.*\\bNOT NULL\\b', line, modules.re.I) %}
      {% if required and (required.group(1) | lower) in ['held_back', 'versions'] %}
        {% do wrong.append(required.group(1) ~ ' NOT NULL (the row leaves it NULL where it does not apply)') %}
      {% endif %}
    {% endfor %}
  {% endif %}
  {% if wrong %}
    {{ dbt_merge.raise_merge_error(said ~ " (" ~ relation ~ ") is not a merge history table the row can be "
        ~ "appended to: " ~ wrong | join(', ') ~ ". Spark would refuse the row after the merge has "
        ~ "committed. Name another table (created on first use), or drop or rename this one. The target "
        ~ "was not changed.") }}
  {% endif %}
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
  {{ return(dbt_merge.find_column('versions', dbt_merge.relation_columns(relation) | map(attribute='name') | list) is not none) }}
{% endmacro %}

{% macro _add_versions_column(relation) %}
  {% if dbt_merge.find_column('versions', dbt_merge.relation_columns(relation) | map(attribute='name') | list) is none %}
    {% do dbt_merge.alter_target_columns(relation, add=[api.Column.create('versions', 'bigint')], remove=[], retype=[]) %}
  {% endif %}
{% endmacro %}

{#- The history table's relation: 'table', 'schema.table' or 'database.schema.table', the rest
    taken from the target. A part may be quoted as the engine quotes names (DuckDB "a.b", with ""
    for a quote inside; Spark `a.b`, with ``), and a quoted part may hold dots. Refused, before
    anything is written: a name that is not one of those forms, and a name the relation would
    render as another name (a part holding the engine's quote character: dbt's relations do not
    escape it). -#}
{% macro merge_history_relation(name, target) %}
  {% set parts = dbt_merge._name_parts(name, plain='[^\\W\\d]\\w*') %}
  {% if parts is none or parts | length > 3 %}
    {{ dbt_merge.raise_merge_error("merge_history_table '" ~ name ~ "' is not a table name: write 'table', "
        ~ "'schema.table' or 'database.schema.table', each part quoted as " ~ adapter.type()
        ~ " quotes names where it needs it (" ~ dbt_merge._name_quote() ~ "my.table" ~ dbt_merge._name_quote()
        ~ "). The target was not changed.") }}
  {% endif %}
  {% if adapter.type() == 'spark' and not modules.re.fullmatch('[A-Za-z0-9_]+', parts | join('_')) %}
    {{ dbt_merge.raise_merge_error("merge_history_table '" ~ name ~ "' names a table or schema Spark's session "
        ~ "catalog (a Hive metastore) cannot hold: a part with a character other than letters, digits and _ "
        ~ "(a dot, a space, a quote, a letter outside ASCII). Name the history table with letters, digits "
        ~ "and _ only. The target was not changed.") }}
  {% endif %}
  {% set relation = api.Relation.create(
        database=parts[-3] if parts | length > 2 else target.database,
        schema=parts[-2] if parts | length > 1 else target.schema,
        identifier=parts[-1], type='table') %}
  {% set wanted = [relation.database, relation.schema, relation.identifier] %}
  {% set rendered = dbt_merge._name_parts(relation | string) %}
  {% if (rendered is none or rendered != wanted[3 - rendered | length:]) and relation.quote is defined %}
    {#- dbt-spark does not quote names: quoted, a part with a dot is one part -#}
    {% set relation = relation.quote(database=true, schema=true, identifier=true) %}
    {% set rendered = dbt_merge._name_parts(relation | string) %}
  {% endif %}
  {% if rendered is none or rendered | length < 2 or rendered != wanted[3 - rendered | length:] %}
    {{ dbt_merge.raise_merge_error("merge_history_table '" ~ name ~ "' cannot be named in SQL as a table of "
        ~ adapter.type() ~ " (it would be written as " ~ relation ~ ", another name): a part holds the quote "
        ~ "character " ~ dbt_merge._name_quote() ~ ". Name the history table without it. The target was not changed.") }}
  {% endif %}
  {#- the model's own table: its rows would be history rows (a first build would make the history
      table first, and the model could never build) -#}
  {% set own = [] %}
  {% set named = [] %}
  {% for part in [target.database, target.schema, target.identifier] %}
    {% do own.append(dbt_merge._ascii_lower(part)) %}
  {% endfor %}
  {% for part in wanted %}
    {% do named.append(dbt_merge._ascii_lower(part)) %}
  {% endfor %}
  {% if named[1:] == own[1:] and (named[0] == own[0] or target.database is none or relation.database is none) %}
    {{ dbt_merge.raise_merge_error("merge_history_table '" ~ name ~ "' names the target itself, " ~ target
        ~ ": the history rows go to a table of their own. Name another table. The target was not changed.") }}
  {% endif %}
  {{ return(relation) }}
{% endmacro %}

{#- A name as the engines fold it to compare names: only A-Z to lower case (DuckDB's "Ä" and "ä"
    are two tables; Spark's metastore names are ASCII). -#}
{% macro _ascii_lower(name) %}
  {% set folded = namespace(text=name | string) %}
  {% for letter in 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' if letter in folded.text %}
    {% set folded.text = folded.text | replace(letter, letter | lower) %}
  {% endfor %}
  {{ return(folded.text) }}
{% endmacro %}

{#- The parts of a dotted name (quoted parts unquoted), or none when it is not one. `plain`: the
    pattern of a part written without quotes (default: any characters but dots, spaces and the
    quote; a name the user writes: the engine's unquoted identifier, a letter or _ then letters,
    digits and _, so that `hist`, 'hist' or h-1 are not taken for a table so named). -#}
{% macro _name_parts(name, plain=none) %}
  {% set q = modules.re.escape(dbt_merge._name_quote()) %}
  {% set plain = plain or '[^.\\s' ~ q ~ ']+' %}
  {% set part = q ~ '(?:[^' ~ q ~ ']|' ~ q ~ q ~ ')+' ~ q ~ '|' ~ plain %}
  {% if not modules.re.fullmatch('(?:' ~ part ~ ')(?:[.](?:' ~ part ~ '))*', name | string) %}
    {{ return(none) }}
  {% endif %}
  {% set parts = [] %}
  {% for quoted, bare in modules.re.findall('(?:^|[.])(?:' ~ q ~ '((?:[^' ~ q ~ ']|' ~ q ~ q ~ ')+)' ~ q ~ '|(' ~ plain ~ '))', name | string) %}
    {% do parts.append(quoted | replace(dbt_merge._name_quote() * 2, dbt_merge._name_quote()) if quoted else bare) %}
  {% endfor %}
  {{ return(parts) }}
{% endmacro %}

{#- The character the engine quotes names with. -#}
{% macro _name_quote() %}
  {{ return(adapter.dispatch('_name_quote', 'dbt_merge')()) }}
{% endmacro %}

{% macro default___name_quote() %}
  {{ return('"') }}
{% endmacro %}

{% macro spark___name_quote() %}
  {{ return('`') }}
{% endmacro %}

{#- (column, type) of the history table. -#}
{% macro merge_history_columns() %}
  {{ return([
      ('model_unique_id', dbt_merge.history_type('string')), ('strategy', dbt_merge.history_type('string')),
      ('invocation_id', dbt_merge.history_type('string')), ('started_at', 'timestamp'), ('finished_at', 'timestamp'),
      ('inserted', 'bigint'), ('updated', 'bigint'), ('deleted', 'bigint'), ('unchanged', 'bigint'),
      ('held_back', 'bigint'), ('total', 'bigint')]) }}
{% endmacro %}

{#- CREATE TABLE IF NOT EXISTS of the history table. -#}
{% macro create_merge_history_sql(relation) %}
  {% set definitions = [] %}
  {% for column, data_type in dbt_merge.merge_history_columns() + [('versions', 'bigint')] %}
    {% do definitions.append(dbt_merge.quote_identifier(column) ~ ' ' ~ data_type) %}
  {% endfor %}
  {{ return('create table if not exists ' ~ relation ~ ' (' ~ definitions | join(', ') ~ ')'
      ~ dbt_merge._history_table_options()) }}
{% endmacro %}

{#- Adds column `versions` to a history table made before it had one (DuckDB: run before the
    merge's transaction, dbt_merge.duckdb.history). -#}
{% macro merge_history_add_versions_sql(relation) %}
  {{ return('alter table ' ~ relation ~ ' add column if not exists ' ~ dbt_merge.quote_identifier('versions') ~ ' bigint') }}
{% endmacro %}

{% macro history_type(logical) %}
  {{ return(adapter.dispatch('history_type', 'dbt_merge')(logical)) }}
{% endmacro %}

{% macro default__history_type(logical) %}
  {{ return('varchar' if logical == 'string' else logical) }}
{% endmacro %}

{% macro spark__history_type(logical) %}
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
