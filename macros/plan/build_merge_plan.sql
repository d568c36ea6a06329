{#-
  Turn the checked config plus the columns the data really has into the plan every engine
  renders. Raises, naming the column, when a configured column does not exist.

    source_columns: dbt Columns of the staged SELECT
    schema:         plan_schema_changes() for an existing table, or none when it is (re)built
    session:        what staging the SELECT read of the session (stage_select's `session`:
                    {'iceberg_extensions': true/false}), or none: read when needed
-#}
{% macro build_merge_plan(cfg, relations, source_columns, schema, session=none) %}
  {#- soft_delete_column (and its timestamp) the SELECT lacks: added to it as live (false, NULL) -#}
  {% if cfg.soft_delete %}
    {#- a table built from the SELECT takes the SELECT's types: checked there (red team
        helper-77: a VARCHAR flag built the table, and every later run was refused for it) -#}
    {% do dbt_merge._check_soft_delete_types(cfg, relations.target,
        schema.target_columns if schema is not none else source_columns, built=schema is none) %}
  {% endif %}
  {% set extras = dbt_merge.soft_delete_extras(cfg, source_columns | map(attribute='name') | list,
                                                schema.target_columns if schema is not none else none) %}
  {% set source_columns = source_columns + extras | map(attribute='column') | list %}
  {% set source_names = source_columns | map(attribute='name') | list %}
  {% set target_names = source_names if schema is none else schema.names %}
  {% if cfg.history and schema is none %}
    {#- a history table is built with its history columns after the SELECT's -#}
    {% set target_names = source_names + dbt_merge.history_columns(cfg, source_columns) | map(attribute='name') | list %}
  {% endif %}
  {% if cfg.soft_delete and schema is not none %}
    {% for col in [cfg.soft_delete.column, cfg.soft_delete.timestamp_column] if col %}
      {% if dbt_merge.find_column(col, target_names) is none %}
        {{ dbt_merge.raise_merge_error("soft_delete column '" ~ col ~ "' is not a column of the target " ~ relations.target
            ~ ". Add it with on_schema_change='append_new_columns', or rebuild the table with --full-refresh. "
            ~ "The target was not changed.") }}
      {% endif %}
    {% endfor %}
  {% endif %}

  {% set key_columns = [] %}
  {% for key in cfg.unique_key %}
    {% set in_source = dbt_merge.find_column(key, source_names) %}
    {% if in_source is none %}
      {{ dbt_merge.raise_merge_error("unique_key column '" ~ key ~ "' is not in the model's SELECT (columns: "
          ~ source_names | join(', ') ~ "). Add it to the SELECT or fix unique_key.") }}
    {% endif %}
    {% if dbt_merge.find_column(key, target_names) is none %}
      {{ dbt_merge.raise_merge_error("unique_key column '" ~ key ~ "' is not in the target table "
          ~ relations.target ~ " (columns: " ~ target_names | join(', ') ~ "). "
          ~ "Run with --full-refresh to rebuild the table with the new key.") }}
    {% endif %}
    {% do key_columns.append(in_source) %}
  {% endfor %}
  {% set key_lower = key_columns | map('lower') | list %}

  {#- the target's generated columns are computed, never written (target_write_limits) -#}
  {% set limits = (schema.get('limits') if schema is not none else none) or {'generated': [], 'referenced_by': []} %}
  {% set generated = [] %}
  {% for col in limits.generated if dbt_merge.find_column(col, target_names) is not none %}
    {% if dbt_merge.find_column(col, source_names) is not none %}
      {{ dbt_merge.raise_merge_error("column '" ~ col ~ "' is a generated column of the target " ~ relations.target
          ~ ": the table computes its value, so no merge can write it. Remove it from the SELECT. "
          ~ "The target was not changed.") }}
    {% endif %}
    {% do generated.append(col | lower) %}
  {% endfor %}
  {% set write_names = [] %}
  {% for col in target_names if col | lower not in generated %}
    {% do write_names.append(col) %}
  {% endfor %}

  {% set order_by = [] %}
  {% for term in cfg.dedup_order_by %}
    {% do order_by.append(dbt_merge._parse_order_term(term, source_names, key_lower)) %}
  {% endfor %}

  {#- Columns a matched row may change: target columns the SELECT has (after on_schema_change),
      minus the keys, narrowed by merge_update_columns / merge_exclude_columns. -#}
  {% set updatable = [] %}
  {% for col in target_names %}
    {% if col | lower not in key_lower and dbt_merge.find_column(col, source_names) is not none %}
      {% do updatable.append(col) %}
    {% endif %}
  {% endfor %}
  {% set chosen = cfg.update_columns if cfg.update_columns is not none else cfg.exclude_columns %}
  {% set option = 'merge_update_columns' if cfg.update_columns is not none else 'merge_exclude_columns' %}
  {% set chosen_lower = [] %}
  {% for col in chosen %}
    {% if dbt_merge.find_column(col, updatable) is none %}
      {{ dbt_merge.raise_merge_error(option ~ " names column '" ~ col ~ "', which is not a non-key column "
          ~ "of both the SELECT and the target (those are: " ~ updatable | join(', ') ~ "). Fix " ~ option ~ ".") }}
    {% endif %}
    {% do chosen_lower.append(col | lower) %}
  {% endfor %}
  {#- the soft-delete columns are always updated: a row whose key comes back is live again -#}
  {% set soft_lower = [cfg.soft_delete.column | lower, (cfg.soft_delete.timestamp_column or '') | lower]
                      if cfg.soft_delete else [] %}
  {% set update_columns = [] %}
  {% for col in updatable %}
    {% if (cfg.update_columns is not none and col | lower in chosen_lower)
          or (cfg.update_columns is none and col | lower not in chosen_lower)
          or col | lower in soft_lower %}
      {% do update_columns.append(col) %}
    {% endif %}
  {% endfor %}

  {#- the columns whose difference marks a matched row as changed -#}
  {% set check_columns = [] %}
  {% if cfg.check_columns is not none %}
    {% for col in cfg.check_columns %}
      {% set found = dbt_merge.find_column(col, updatable) %}
      {% if found is none %}
        {{ dbt_merge.raise_merge_error("merge_check_columns names column '" ~ col ~ "', which is not a non-key column "
            ~ "of both the SELECT and the target (those are: " ~ updatable | join(', ') ~ "). Fix merge_check_columns.") }}
      {% endif %}
      {% do check_columns.append(found) %}
    {% endfor %}
    {% for col in updatable if col | lower in soft_lower and col not in check_columns %}
      {% do check_columns.append(col) %}
    {% endfor %}
  {% else %}
    {% set check_columns = update_columns %}
  {% endif %}
  {% for option in ['update_condition', 'delete_condition'] if cfg[option] %}
    {% do dbt_merge._check_condition_columns(option, cfg[option], source_names, target_names) %}
  {% endfor %}

  {% set actions = cfg.actions %}
  {#- True when every row the merge writes is a source row as it is: a matched row is either left
      alone or gets every non-key target column from the source. Engines can then write straight
      from the source and classify only the matched keys (see classify_matched_keys_sql). -#}
  {% set non_key_count = target_names | map('lower') | reject('in', key_lower + generated) | list | length %}
  {% set writes_source_rows = (actions.matched != 'update' or update_columns | length == non_key_count)
                              and not cfg.history %}
  {% set join_type = 'full outer' if actions.target_only == 'delete'
                     else ('inner' if actions.source_only == 'skip' else 'left outer') %}
  {% set all_names = source_names + (schema.target_columns | map(attribute='name') | list if schema else []) %}
  {% set conversions = dbt_merge.source_conversions(source_columns, schema) if schema else [] %}
  {#- the columns as the merge compares them (converted to the target's types): which need
      judging byte for byte whatever collation the engine would compare them by -#}
  {% set compared = [] %}
  {% for col in source_columns %}
    {% set converted = conversions | selectattr('column', 'equalto', col.name) | list %}
    {% do compared.append({'name': col.name, 'dtype': converted[0].target_type if converted else col.dtype}) %}
  {% endfor %}
  {{ return({
    'session': session or {},
    'strategy': cfg.strategy,
    'actions': actions,
    'join_type': join_type,
    'key_columns': key_columns,
    'source_names': source_names,
    'source_columns': source_columns,
    'target_names': target_names,
    'write_names': write_names,
    'update_in_place': limits.referenced_by | length > 0,
    'update_columns': update_columns if actions.matched == 'update' else [],
    'check_columns': check_columns if actions.matched == 'update' else [],
    'detect_unchanged': cfg.detect_unchanged,
    'update_condition': cfg.update_condition,
    'delete_condition': cfg.delete_condition,
    'soft_delete': cfg.soft_delete,
    'extras': extras,
    'writes_source_rows': writes_source_rows,
    'order_by': order_by,
    'predicates': cfg.predicates,
    'max_delete_fraction': cfg.max_delete_fraction,
    'key_outside_predicates': cfg.key_outside_predicates,
    'full_merge_write': cfg.full_merge_write,
    'target_storage': cfg.get('target_storage'),
    'target': relations.target,
    'raw_stage': relations.stage,
    'stage': relations.converted if conversions or extras else relations.stage,
    'conversions': conversions,
    'compare': dbt_merge.compare_kinds(compared),
    'deduped': relations.deduped,
    'changes': relations.changes,
    'every_source_row': false,
    'schema': schema,
    'names': dbt_merge.work_names(all_names),
    'history': dbt_merge.build_history_plan(cfg, source_columns, target_names, key_columns, schema, relations)
               if cfg.history else none,
  }) }}
{% endmacro %}


{#- Names the package gives its own work columns, chosen so that none equals (ignoring case) a
    column of the model: a user may name a column anything, including 'dbt_merge_action'. -#}
{% macro work_names(column_names) %}
  {% set taken = column_names | map('lower') | list %}
  {% set names = {} %}
  {% for role in ['action', 'row', 'rows', 'variants', 'at', 'current', 'next', 'live', 'scope', 'bad', 'from', 'to', 'id'] %}
    {% set base = 'dbt_merge_' ~ role %}
    {% set ns = namespace(name=base, n=0) %}
    {% for _ in range(column_names | length + 1) %}
      {% if ns.name | lower in taken %}
        {% set ns.n = ns.n + 1 %}
        {% set ns.name = base ~ '_' ~ ns.n %}
      {% endif %}
    {% endfor %}
    {% do names.update({role: ns.name}) %}
  {% endfor %}
  {{ return(names) }}
{% endmacro %}


{#- Source columns whose values must be converted to the target's type to be judged as the
    target will store them: a list of {column, target_type, sql} where sql reads the column of
    the staged SELECT (unqualified) as the target stores it. Columns the schema change retypes
    to the SELECT's type, or adds, need none. A collation is no conversion: values are compared
    byte for byte (compared_value). -#}
{% macro source_conversions(source_columns, schema) %}
  {% set conversions = [] %}
  {% set retyped = schema.retyped | map(attribute='column') | map(attribute='name') | map('lower') | list %}
  {% for col in source_columns %}
    {% set match = schema.target_columns | selectattr('name', 'equalto',
                     dbt_merge.find_column(col.name, schema.target_columns | map(attribute='name') | list)) | list %}
    {% if match and match[0].name | lower not in retyped %}
      {% set source_type = col.dtype | lower | replace(' ', '') %}
      {% set target_type = match[0].dtype | lower | replace(' ', '') %}
      {% if source_type != target_type %}
        {% do conversions.append({'column': col.name, 'target_type': match[0].dtype,
                                  'sql': dbt_merge.convert_to_target_sql(dbt_merge.quote_identifier(col.name),
                                                                         match[0].dtype)}) %}
      {% endif %}
    {% endif %}
  {% endfor %}
  {{ return(conversions) }}
{% endmacro %}


{#- 'col', 'col desc', 'col asc' (a column name may contain spaces) -> {column, descending}. -#}
{% macro _parse_order_term(term, source_names, key_lower) %}
  {% set column = dbt_merge.find_column(term, source_names) %}
  {% set descending = false %}
  {% if column is none %}
    {% set words = term.split() %}
    {% set last = words[-1] | lower if words else '' %}
    {% if last in ['asc', 'desc'] and words | length > 1 %}
      {% set descending = last == 'desc' %}
      {#- a column's name may begin or end with a space ('trail ' desc is written 'trail  desc'):
          first drop only the one space before asc/desc, then any -#}
      {% set base = term.rstrip() %}
      {% set head = base[:base | length - last | length] %}
      {% set column = dbt_merge.find_column(head[:-1], source_names) if head[-1:].isspace() else none %}
      {% if column is none %}
        {% set column = dbt_merge.find_column(head.rstrip(), source_names) %}
      {% endif %}
    {% endif %}
  {% endif %}
  {% if column is none %}
    {{ dbt_merge.raise_merge_error("dedup_order_by '" ~ term ~ "' does not name a column of the model's SELECT "
        ~ "(columns: " ~ source_names | join(', ') ~ "). Write it as 'column', 'column asc' or 'column desc'; "
        ~ "NULLs always sort last.") }}
  {% endif %}
  {% if column | lower in key_lower %}
    {{ dbt_merge.raise_merge_error("dedup_order_by column '" ~ column ~ "' is part of unique_key, so it is the "
        ~ "same for every row of a key and cannot choose one. Order by a non-key column such as a timestamp.") }}
  {% endif %}
  {{ return({'column': column, 'descending': descending}) }}
{% endmacro %}


{#- [{column (a dbt Column), sql}] for the soft-delete columns the SELECT lacks. Typed as the
    target's column when it has one (`target_columns`, dbt Columns; a TIMESTAMPTZ deleted_at gets
    a TIMESTAMPTZ NULL), else boolean and timestamp. -#}
{% macro soft_delete_extras(cfg, source_names, target_columns=none) %}
  {% set extras = [] %}
  {% if cfg.soft_delete %}
    {% for name, data_type, value in [(cfg.soft_delete.column, 'boolean', 'false'),
                                      (cfg.soft_delete.timestamp_column, 'timestamp', 'null')] %}
      {% if name and dbt_merge.find_column(name, source_names) is none %}
        {% set kept = dbt_merge.column_named(name, target_columns) %}
        {% set typed = kept.dtype if kept is not none else data_type %}
        {% do extras.append({'column': api.Column.create(name, typed),
                             'sql': 'cast(' ~ value ~ ' as ' ~ typed ~ ')'}) %}
      {% endif %}
    {% endfor %}
  {% endif %}
  {{ return(extras) }}
{% endmacro %}



{#- Refuse a table whose soft-delete column cannot take what the merge writes and reads there,
    naming it, its type and the fix, before the engine's own error: the flag is set true and
    read as coalesce(flag, false), so BOOLEAN (DuckDB also takes an integer type, as 1 and 0);
    the time is set to the merge's current_timestamp, so a timestamp, a date, a time or a
    string type. Types that work are never refused (red team helper-46: the rest failed raw). -#}
{% macro _check_soft_delete_types(cfg, target, target_columns, built=false) %}
  {% set integers = ['tinyint', 'smallint', 'integer', 'int', 'bigint', 'hugeint', 'utinyint', 'usmallint',
                     'uinteger', 'ubigint', 'uhugeint', 'int1', 'int2', 'int4', 'int8'] %}
  {% for option, name in [('soft_delete_column', cfg.soft_delete.column),
                          ('soft_delete_timestamp_column', cfg.soft_delete.timestamp_column)] if name %}
    {% set found = dbt_merge.column_named(name, target_columns) %}
    {% set dtype = (found.dtype | string | lower | trim) if found is not none else none %}
    {% if dtype is not none %}
      {% if option == 'soft_delete_column' %}
        {% set fits = dtype in ['boolean', 'bool', 'logical'] or (adapter.type() == 'duckdb' and dtype in integers) %}
        {% set wanted = 'BOOLEAN' ~ (' (or an integer type, which takes 1 and 0)' if adapter.type() == 'duckdb' else '') %}
        {% set writes = 'sets it true and reads NULL as false' %}
      {% else %}
        {#- never a list (TIMESTAMP[] starts like a timestamp; red team helper-49) -#}
        {% set fits = (dtype.startswith('time') or dtype in ['date', 'datetime', 'string', 'text']
                       or dtype.startswith('varchar') or dtype.startswith('char')) and '[' not in dtype %}
        {% set wanted = 'a TIMESTAMP (with or without time zone), DATE or string type' %}
        {% set writes = 'sets it to the time of the soft delete' %}
      {% endif %}
      {% if not fits %}
        {% set place = "the model's SELECT, which builds the target " if built else "the target " %}
        {% set fix = "Cast it in the SELECT" if built
            else "Change the column's type (or rebuild the table with --full-refresh)" %}
        {{ dbt_merge.raise_merge_error(option ~ " '" ~ found.name ~ "' is " ~ found.dtype | upper ~ " in " ~ place
            ~ target ~ ": the merge " ~ writes ~ ", so it must be " ~ wanted ~ ". " ~ fix
            ~ ", or name a column of such a type. The target was not changed.") }}
      {% endif %}
    {% endif %}
  {% endfor %}
{% endmacro %}


{#- Refuse a condition naming a column that neither side has (DBT_INTERNAL_SOURCE.<c> must be a
    column of the SELECT, DBT_INTERNAL_DEST.<c> of the target), with the package's message
    instead of the engine's binder error. Quoted names ("a b", `a b`) are read as written. -#}
{% macro _check_condition_columns(option, condition, source_names, target_names) %}
  {% for ref in dbt_merge.alias_references(condition) %}
    {% set source_side = ref.alias == 'DBT_INTERNAL_SOURCE' %}
    {% set names = source_names if source_side else target_names %}
    {% if dbt_merge.find_column(ref.column, names) is none %}
      {{ dbt_merge.raise_merge_error(option | replace('update_condition', 'merge_update_condition') ~ " names "
          ~ ref.alias ~ "." ~ ref.column ~ ", which is not a column of the "
          ~ ("model's SELECT" if source_side else "target") ~ " (columns: " ~ names | join(', ') ~ "). Fix the condition.") }}
    {% endif %}
  {% endfor %}
{% endmacro %}
