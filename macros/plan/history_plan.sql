{#-
  strategy='history': the plan's part that only a history table has (plan.history), built by
  build_merge_plan from the checked config (validate_history_config), the SELECT's columns and
  the table's. A history table holds, beside the SELECT's columns, dbt snapshots' five columns
  (or their snapshot_meta_column_names): dbt_scd_id, dbt_updated_at, dbt_valid_from,
  dbt_valid_to, and with hard_deletes='new_record' dbt_is_deleted ('True'/'False', as dbt
  writes it). A key's current version is its row whose dbt_valid_to is NULL (or
  dbt_valid_to_current).
-#}

{#- The run's time, one value for the whole run: the engine's clock read once as an instant
    (microseconds since the epoch), and written as SQL that is that instant whatever the
    session's time zone (history_instant_sql), so that every version a run opens or closes by the
    clock has the same time. Cast to a column's type (history_time) it is what dbt's
    snapshot_get_time() gives for that type: a timestamp with a zone (DuckDB's TIMESTAMPTZ,
    Spark's TIMESTAMP) holds the instant; a wall-clock TIMESTAMP (DuckDB's, Spark's
    TIMESTAMP_NTZ) or a DATE its reading in the session's time zone, as DuckDB's
    now()::timestamp does. (A reading of the clock as text, cast back, is ambiguous in the hour
    a daylight-saving change repeats.) -#}
{% macro history_run_time() %}
  {% set micros = dbt_merge.run_sql('select ' ~ adapter.dispatch('history_clock_micros_sql', 'dbt_merge')(),
                                    'dbt_merge_check').rows[0][0] | int %}
  {{ return(dbt_merge.history_instant_sql(micros)) }}
{% endmacro %}

{#- SQL: the engine's clock now, as microseconds since the epoch. -#}
{% macro default__history_clock_micros_sql() %}
  {{ return('unix_micros(current_timestamp())') }}
{% endmacro %}

{% macro duckdb__history_clock_micros_sql() %}
  {{ return('epoch_us(now())') }}
{% endmacro %}

{#- SQL: the instant `micros` microseconds after the epoch, as a timestamp with a time zone
    (DuckDB's TIMESTAMPTZ, Spark's TIMESTAMP), the same instant in every session time zone. -#}
{% macro history_instant_sql(micros) %}
  {{ return(adapter.dispatch('history_instant_sql', 'dbt_merge')(micros | int)) }}
{% endmacro %}

{% macro default__history_instant_sql(micros) %}
  {{ return('timestamp_micros(' ~ micros ~ ')') }}
{% endmacro %}

{% macro duckdb__history_instant_sql(micros) %}
  {{ return("(make_timestamp(cast(" ~ micros ~ " as bigint)) at time zone 'UTC')") }}
{% endmacro %}

{#- [{name, role, column (a dbt Column)}] of the history columns the table has or gets, in the
    order dbt snapshots write them: dbt_scd_id, dbt_updated_at, dbt_valid_from, dbt_valid_to,
    dbt_is_deleted (with hard_deletes='new_record', or when the table has it). `source_columns`:
    the SELECT's; `target_columns`: the table's, or none when it is being built. A column the
    table has keeps its own name and type; the others are typed after updated_at (timestamp
    without it), dbt_scd_id and dbt_is_deleted as strings. -#}
{% macro history_columns(cfg, source_columns, target_columns=none) %}
  {% set history = cfg.history %}
  {% set source_names = source_columns | map(attribute='name') | list %}
  {% set time_type = 'timestamp' %}
  {% if history.updated_at %}
    {% set found = dbt_merge.find_column(history.updated_at, source_names) %}
    {% if found is not none %}
      {% set time_type = (source_columns | selectattr('name', 'equalto', found) | first).dtype %}
    {% endif %}
  {% endif %}
  {% set target_names = (target_columns or []) | map(attribute='name') | list %}
  {% set columns = [] %}
  {% for role, data_type in [('dbt_scd_id', dbt_merge.history_type('string')), ('dbt_updated_at', time_type),
                             ('dbt_valid_from', time_type), ('dbt_valid_to', time_type),
                             ('dbt_is_deleted', dbt_merge.history_type('string'))] %}
    {% set name = history.columns[role] %}
    {% set kept = dbt_merge.find_column(name, target_names) %}
    {% if role != 'dbt_is_deleted' or history.hard_deletes == 'new_record' or kept is not none %}
      {% set column = (target_columns | selectattr('name', 'equalto', kept) | first) if kept is not none
                      else api.Column.create(name, data_type) %}
      {% do columns.append({'name': column.name, 'role': role, 'column': column}) %}
    {% endif %}
  {% endfor %}
  {{ return(columns) }}
{% endmacro %}

{#- plan.history for build_merge_plan: {updated_at (the SELECT's column, or none), compare (the
    columns whose change makes a new version; none compared with updated_at alone), same_time
    (the columns that tell a late row from an unchanged one at its current version's own time),
    cols ({role:
    the table's column name, dbt_is_deleted none when there is none}), time_type (the type of
    dbt_valid_from), valid_to_current, hard_deletes, late_rows, data (the table's other columns),
    run_time (set by the flow)}. Refuses, naming the column, what the SELECT and the table cannot
    do: no updated_at column in the SELECT, an updated_at that is no date or timestamp, a column
    of the SELECT named like a history column, a table without them (not a history table). -#}
{% macro build_history_plan(cfg, source_columns, target_names, key_columns, schema, relations) %}
  {% set history = cfg.history %}
  {% set source_names = source_columns | map(attribute='name') | list %}
  {% set updated_at = none %}
  {% if history.updated_at %}
    {% set updated_at = dbt_merge.find_column(history.updated_at, source_names) %}
    {% if updated_at is none %}
      {{ dbt_merge.raise_merge_error("updated_at column '" ~ history.updated_at ~ "' is not in the model's SELECT "
          ~ "(columns: " ~ source_names | join(', ') ~ "). Add it to the SELECT or fix updated_at.") }}
    {% endif %}
    {% set data_type = (source_columns | selectattr('name', 'equalto', updated_at) | first).dtype %}
    {% if dbt_merge.type_family(data_type) != 'temporal' or data_type | lower | trim in ['time', 'time with time zone', 'timetz'] %}
      {{ dbt_merge.raise_merge_error("updated_at column '" ~ updated_at ~ "' has type " ~ data_type ~ ", but a version "
          ~ "is valid from its value, which must be a date or a timestamp. Cast it in the SELECT (e.g. cast("
          ~ updated_at ~ " as timestamp)).") }}
    {% endif %}
  {% endif %}
  {% set meta = dbt_merge.history_columns(cfg, source_columns, schema.target_columns if schema is not none else none) %}
  {% for m in meta if dbt_merge.find_column(m.name, source_names) is not none %}
    {{ dbt_merge.raise_merge_error("the model's SELECT has a column '" ~ dbt_merge.find_column(m.name, source_names)
        ~ "', which strategy 'history' writes itself (" ~ m.role ~ "). Rename it in the SELECT, or give the history "
        ~ "column another name with snapshot_meta_column_names={'" ~ m.role ~ "': '<name>'}.") }}
  {% endfor %}
  {% set cols = {'dbt_is_deleted': none} %}
  {% for m in meta %}
    {% if schema is not none and dbt_merge.find_column(m.name, target_names) is none %}
      {% if m.role != 'dbt_is_deleted' %}
        {{ dbt_merge.raise_merge_error("the target " ~ relations.target ~ " has no column '" ~ m.name ~ "' (" ~ m.role
            ~ "), so it is not a history table (columns: " ~ target_names | join(', ') ~ "). Merge into the history "
            ~ "table itself, fix snapshot_meta_column_names, or rebuild the table with --full-refresh (its history "
            ~ "starts anew). The target was not changed.") }}
      {% endif %}
      {{ dbt_merge.raise_merge_error("the target " ~ relations.target ~ " has no column '" ~ m.name ~ "', which "
          ~ "hard_deletes='new_record' writes. Add it with on_schema_change='append_new_columns' (past versions get "
          ~ "NULL: not deleted), as dbt snapshots do. The target was not changed.") }}
    {% endif %}
    {% do cols.update({m.role: dbt_merge.find_column(m.name, target_names) if schema is not none else m.name}) %}
  {% endfor %}
  {% set time_column = meta | selectattr('role', 'equalto', 'dbt_valid_from') | first %}
  {% set meta_lower = meta | map(attribute='name') | map('lower') | list %}
  {% set key_lower = key_columns | map('lower') | list %}
  {% set data = [] %}
  {% for col in target_names if col | lower not in meta_lower %}
    {% do data.append(col) %}
  {% endfor %}

  {#- the columns whose change makes a new version: merge_check_columns/check_cols ('all': every
      non-key column the SELECT and the table share); unset, every such column without
      updated_at, none with it (a newer updated_at is the change, dbt's timestamp strategy) -#}
  {% set shared = [] %}
  {% for col in data if col | lower not in key_lower and dbt_merge.find_column(col, source_names) is not none %}
    {% do shared.append(col) %}
  {% endfor %}
  {% set compare = [] %}
  {% if history.check_columns == 'all' or (history.check_columns is none and not updated_at) %}
    {% set compare = shared %}
  {% elif history.check_columns is not none %}
    {% for col in history.check_columns %}
      {% set found = dbt_merge.find_column(col, shared) %}
      {% if found is none %}
        {{ dbt_merge.raise_merge_error("merge_check_columns names column '" ~ col ~ "', which is not a non-key column "
            ~ "of both the SELECT and the target (those are: " ~ shared | join(', ') ~ "). Fix merge_check_columns.") }}
      {% endif %}
      {% do compare.append(found) %}
    {% endfor %}
  {% endif %}
  {#- the columns compared when a row has its current version's own time (an updated_at equal to
      its dbt_updated_at): differing there, the row is late (a version valid for no time), else
      unchanged. The compared columns, or with updated_at alone every column the SELECT and the
      table share but those the engine cannot compare (Spark: MAP). -#}
  {% set same_time = compare | list %}
  {% if not compare and updated_at %}
    {% for col in shared %}
      {% set source_col = source_columns | selectattr('name', 'equalto', dbt_merge.find_column(col, source_names)) | first %}
      {% if adapter.dispatch('_history_comparable', 'dbt_merge')(source_col.dtype) %}
        {% do same_time.append(col) %}
      {% endif %}
    {% endfor %}
  {% endif %}
  {{ return({
    'updated_at': updated_at,
    'compare': compare,
    'same_time': same_time,
    'check': history.check_columns is not none or not updated_at,
    'cols': cols,
    'meta': meta,
    'time_type': time_column.column.dtype,
    'valid_to_current': history.valid_to_current,
    'hard_deletes': history.hard_deletes,
    'late_rows': history.late_rows,
    'data': data,
    'run_time': none,
  }) }}
{% endmacro %}

{#- Whether the engine can tell two values of type `data_type` apart (IS DISTINCT FROM). -#}
{% macro default___history_comparable(data_type) %}
  {{ return(true) }}
{% endmacro %}

{# Spark cannot compare MAP values (INVALID_ORDERING_TYPE), nor anything holding one. #}
{% macro spark___history_comparable(data_type) %}
  {{ return('map<' not in (data_type or '') | lower) }}
{% endmacro %}

{#- SQL: the row aliased `alias` is its key's current version (dbt_valid_to NULL, or
    dbt_valid_to_current, as dbt snapshots read it). -#}
{% macro history_current(plan, alias) %}
  {%- set vt = alias ~ '.' ~ dbt_merge.quote_identifier(plan.history.cols.dbt_valid_to) -%}
  {%- if plan.history.valid_to_current -%}
    {{ return('(' ~ vt ~ ' is null or ' ~ vt ~ ' = (' ~ plan.history.valid_to_current ~ '))') }}
  {%- endif -%}
  {{ return(vt ~ ' is null') }}
{% endmacro %}

{#- SQL: the row aliased `alias` is a live current version the merge considers: current, within
    incremental_predicates, not a deletion record (what max_delete_fraction is a fraction of). -#}
{% macro history_live(plan, alias) %}
  {{ return('((' ~ dbt_merge.target_rows_condition(plan, false) ~ ') and ' ~ dbt_merge.history_current(plan, alias)
            ~ ' and not (' ~ dbt_merge.history_deleted(plan, alias) ~ '))') }}
{% endmacro %}

{#- SQL: the version aliased `alias` is a deletion record (dbt_is_deleted 'True'); false when
    the table has no such column. -#}
{% macro history_deleted(plan, alias) %}
  {%- if not plan.history.cols.dbt_is_deleted -%}
    {{ return('false') }}
  {%- endif -%}
  {#- a column being added (on_schema_change) is NULL in every row until the write: no deletion
      record; the write (apply_history) reads the column it added -#}
  {% for added in (plan.schema.added if plan.schema is not none and not plan.history.get('writing') else [])
      if added.name | lower == plan.history.cols.dbt_is_deleted | lower %}
    {{ return('false') }}
  {% endfor %}
  {{ return('coalesce(' ~ alias ~ '.' ~ dbt_merge.quote_identifier(plan.history.cols.dbt_is_deleted) ~ " = 'True', false)") }}
{% endmacro %}

{#- SQL: `value` as the type of dbt_valid_from. -#}
{% macro history_time(plan, value) %}
  {{ return('cast(' ~ value ~ ' as ' ~ plan.history.time_type ~ ')') }}
{% endmacro %}

{#- SQL: dbt_valid_to of a new current version (NULL, or dbt_valid_to_current). -#}
{% macro history_open_end(plan) %}
  {{ return(dbt_merge.history_time(plan, plan.history.valid_to_current or 'null')) }}
{% endmacro %}

{#- SQL: dbt snapshots' dbt_scd_id, md5 of the key columns and `time` (each cast to a string,
    NULL as '', joined by '|'): `prefix` qualifies the key columns. -#}
{% macro history_scd_id(plan, prefix, time) %}
  {%- set parts = [] -%}
  {%- for key in plan.key_columns -%}
    {%- do parts.append("coalesce(cast(" ~ prefix ~ dbt_merge.quote_identifier(key) ~ " as string), '')") -%}
  {%- endfor -%}
  {%- do parts.append("coalesce(cast(" ~ time ~ " as string), '')") -%}
  {{ return('md5(' ~ parts | join(" || '|' || ") ~ ')') }}
{% endmacro %}

{#- The rows a first build (or an allowed full refresh) of a history table loads: every row of the
    checked SELECT as its key's first version, valid from updated_at (or the run's time), the
    history columns after the SELECT's, as dbt snapshots build their table. -#}
{% macro history_build_rows_sql(plan) %}
  {%- set h = plan.history -%}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set start = dbt_merge.history_time(plan, src ~ '.' ~ dbt_merge.quote_identifier(h.updated_at) if h.updated_at else h.run_time) -%}
  {%- set values = {'dbt_scd_id': dbt_merge.history_scd_id(plan, src ~ '.', start), 'dbt_updated_at': start,
                    'dbt_valid_from': start, 'dbt_valid_to': dbt_merge.history_open_end(plan),
                    'dbt_is_deleted': "cast('False' as " ~ dbt_merge.history_type('string') ~ ")"} -%}
  {%- set select_list = [] -%}
  {%- for col in plan.source_names -%}
    {%- do select_list.append(src ~ '.' ~ dbt_merge.quote_identifier(col)) -%}
  {%- endfor -%}
  {%- for m in h.meta -%}
    {%- do select_list.append(values[m.role] ~ ' as ' ~ dbt_merge.quote_identifier(m.name)) -%}
  {%- endfor -%}
  {{ return('select ' ~ select_list | join(', ') ~ ' from ' ~ (plan.deduped or plan.stage) ~ ' as ' ~ src) }}
{% endmacro %}
