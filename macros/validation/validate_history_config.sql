{#-
  strategy='history' (slowly changing dimensions, type 2): read and check its config before any
  SQL runs. The names and meanings are dbt snapshots', so that a snapshot moves to a model and
  back:
    updated_at                  a column of the SELECT: a version is valid from its value (dbt's
                                `timestamp` strategy); unset: from the run's time, one value per
                                run (dbt's `check` strategy)
    merge_check_columns         the columns whose change makes a new version (dbt's check_cols,
      (or check_cols)           accepted under that name too, 'all' included); unset: every column
                                without updated_at, none with it (a newer updated_at is the change)
    hard_deletes                ignore (default) | invalidate | new_record (dbt_is_deleted rows);
                                dbt's older invalidate_hard_deletes=true is read as invalidate
    dbt_valid_to_current        SQL for dbt_valid_to of current versions (default NULL)
    snapshot_meta_column_names  other names for dbt_valid_from, dbt_valid_to, dbt_scd_id,
                                dbt_updated_at, dbt_is_deleted
    late_rows                   hold (default: a row older than its key's current version is
                                held back and counted) | fail (the run is refused)
  Returns {updated_at, check_columns (a list, 'all' or none), hard_deletes, late_rows,
  valid_to_current, columns ({dbt name: name in the table})}. Refuses what cannot apply to a
  history table, naming the option and the fix.
-#}
{% macro validate_history_config(strategy) %}
  {% set history_keys = ['updated_at', 'hard_deletes', 'invalidate_hard_deletes', 'check_cols',
                         'dbt_valid_to_current', 'snapshot_meta_column_names', 'late_rows'] %}
  {% if strategy != 'history' %}
    {% for key in history_keys if config.get(key) is not none %}
      {{ dbt_merge.raise_merge_error(key ~ " is set but strategy is '" ~ strategy ~ "'; it is only used by strategy "
          ~ "'history'. Remove " ~ key ~ " or set strategy='history'.") }}
    {% endfor %}
    {{ return(none) }}
  {% endif %}

  {#- options of the other strategies that have no meaning for a history table -#}
  {% set refused = [
      ('merge_update_columns', "a new version holds every column of the SELECT"),
      ('merge_exclude_columns', "a new version holds every column of the SELECT; to keep a column from making "
                                ~ "new versions, leave it out of merge_check_columns"),
      ('merge_update_condition', "a version is never updated, only closed; rows older than their key's current "
                                 ~ "version are held back already (late_rows)"),
      ('delete_condition', "keys the SELECT no longer holds are closed by hard_deletes='invalidate' or "
                           ~ "'new_record'"),
      ('soft_delete_column', "hard_deletes='new_record' marks deleted keys with a dbt_is_deleted version"),
      ('soft_delete_timestamp_column', "hard_deletes='new_record' marks deleted keys with a dbt_is_deleted version"),
  ] %}
  {% for option, why in refused if config.get(option) is not none %}
    {{ dbt_merge.raise_merge_error(option ~ " does not apply to strategy 'history': " ~ why ~ ". Remove " ~ option ~ ".") }}
  {% endfor %}
  {% if config.get('detect_unchanged', true) is sameas false %}
    {{ dbt_merge.raise_merge_error("detect_unchanged=false does not apply to strategy 'history': it would write a new "
        ~ "version of every key on every run. Remove detect_unchanged, or narrow merge_check_columns.") }}
  {% endif %}
  {% if (config.get('on_key_outside_predicates') or 'fail') != 'fail' %}
    {{ dbt_merge.raise_merge_error("on_key_outside_predicates='" ~ config.get('on_key_outside_predicates') ~ "' does "
        ~ "not apply to strategy 'history': a key whose current version is outside incremental_predicates would get "
        ~ "a second current version. Remove on_key_outside_predicates (such keys are refused).") }}
  {% endif %}
  {% if config.get('on_schema_change') == 'sync_all_columns' %}
    {{ dbt_merge.raise_merge_error("on_schema_change='sync_all_columns' does not apply to strategy 'history': it "
        ~ "would drop or retype columns that past versions hold. Use on_schema_change='append_new_columns' (new "
        ~ "columns are added, NULL in past versions), as dbt snapshots do.") }}
  {% endif %}

  {% set updated_at = config.get('updated_at') %}
  {% if updated_at is not none and (updated_at is not string or not updated_at | trim) %}
    {{ dbt_merge.raise_merge_error("updated_at must name a column of the SELECT (a string), got " ~ updated_at
        ~ ". Set updated_at='<column>' (a version is valid from its value), or leave it out (valid from the "
        ~ "run's time, dbt's check strategy).") }}
  {% endif %}

  {#- check_cols (dbt's name) or merge_check_columns (the package's): one of them -#}
  {% set check_cols = config.get('check_cols') %}
  {% set check_columns = config.get('merge_check_columns') %}
  {% if check_cols is not none and check_columns is not none %}
    {{ dbt_merge.raise_merge_error("check_cols and merge_check_columns are both set; they are the same option "
        ~ "(check_cols is dbt snapshots' name). Set only one of them.") }}
  {% endif %}
  {% set chosen = check_cols if check_cols is not none else check_columns %}
  {% if chosen is string and chosen | lower == 'all' %}
    {% set chosen = 'all' %}
  {% elif chosen is not none %}
    {% set chosen = dbt_merge.as_list(chosen) %}
    {% if chosen | length == 0 %}
      {{ dbt_merge.raise_merge_error((('check_cols' if check_cols is not none else 'merge_check_columns'))
          ~ " is empty. List the columns whose change makes a new version, or 'all'.") }}
    {% endif %}
  {% endif %}

  {#- hard_deletes, as dbt's get_hard_deletes_behavior reads it -#}
  {% set hard_deletes = config.get('hard_deletes') %}
  {% set legacy = config.get('invalidate_hard_deletes') %}
  {% if hard_deletes is not none and legacy is not none %}
    {{ dbt_merge.raise_merge_error("hard_deletes and invalidate_hard_deletes are both set (as dbt snapshots, the "
        ~ "older invalidate_hard_deletes=true means hard_deletes='invalidate'). Set only hard_deletes.") }}
  {% endif %}
  {% if legacy is not none and legacy not in [true, false] %}
    {{ dbt_merge.raise_merge_error("invalidate_hard_deletes " ~ legacy ~ " is not true or false.") }}
  {% endif %}
  {% set hard_deletes = 'invalidate' if legacy else (hard_deletes or 'ignore') %}
  {% if hard_deletes not in ['ignore', 'invalidate', 'new_record'] %}
    {{ dbt_merge.raise_merge_error("hard_deletes '" ~ hard_deletes ~ "' is not one of: ignore, invalidate, new_record.") }}
  {% endif %}

  {% set late_rows = config.get('late_rows') or 'hold' %}
  {% if late_rows not in ['hold', 'fail'] %}
    {{ dbt_merge.raise_merge_error("late_rows '" ~ late_rows ~ "' is not one of: hold (a row older than its key's "
        ~ "current version is held back and counted), fail (the run is refused).") }}
  {% endif %}

  {% set valid_to_current = config.get('dbt_valid_to_current') %}
  {% if valid_to_current is not none and (valid_to_current is not string or not valid_to_current | trim) %}
    {{ dbt_merge.raise_merge_error("dbt_valid_to_current must be SQL (a non-empty string) such as "
        ~ "\"cast('9999-12-31' as timestamp)\", got " ~ valid_to_current ~ ".") }}
  {% endif %}

  {#- snapshot_meta_column_names: other names for the five columns, as dbt snapshots take them -#}
  {% set defaults = ['dbt_valid_from', 'dbt_valid_to', 'dbt_scd_id', 'dbt_updated_at', 'dbt_is_deleted'] %}
  {% set given = config.get('snapshot_meta_column_names') or {} %}
  {% if given is not mapping %}
    {{ dbt_merge.raise_merge_error("snapshot_meta_column_names must be a mapping such as {'dbt_valid_from': "
        ~ "'valid_from'}, got " ~ given ~ ".") }}
  {% endif %}
  {% set columns = {} %}
  {% for name in defaults %}
    {% do columns.update({name: name}) %}
  {% endfor %}
  {% for name, value in given.items() %}
    {% if name not in defaults %}
      {{ dbt_merge.raise_merge_error("snapshot_meta_column_names names '" ~ name ~ "', which is not one of: "
          ~ defaults | join(', ') ~ ".") }}
    {% endif %}
    {% if value is not none %}
      {% if value is not string or not value | trim %}
        {{ dbt_merge.raise_merge_error("snapshot_meta_column_names." ~ name ~ " must be a column name, got " ~ value ~ ".") }}
      {% endif %}
      {% do columns.update({name: value}) %}
    {% endif %}
  {% endfor %}
  {% if columns.values() | map('lower') | unique | list | length != 5 %}
    {{ dbt_merge.raise_merge_error("snapshot_meta_column_names gives two of the columns one name ("
        ~ columns.values() | join(', ') ~ "). Give each its own.") }}
  {% endif %}

  {{ return({'updated_at': updated_at | trim if updated_at else none, 'check_columns': chosen,
             'hard_deletes': hard_deletes, 'late_rows': late_rows,
             'valid_to_current': valid_to_current | trim if valid_to_current else none, 'columns': columns}) }}
{% endmacro %}

{#- A rebuild (--full-refresh) of a history table that exists: refused unless the model says
    full_refresh=true, since a history cannot be rebuilt from its source (every past version
    would be lost). Checked with the config, before anything a run may change (Spark: an
    interrupted write finished or its work table dropped, finish_interrupted_write), so that the
    refused run leaves everything as it was. A Python door's full_refresh=True is that request.
    `dataset`: a `location` model's dataset that has files, named for the message. -#}
{% macro check_history_rebuild(cfg, dataset=none) %}
  {% if not cfg.history or not should_full_refresh() or config.get('full_refresh') is sameas true %}
    {{ return(none) }}
  {% endif %}
  {#- a `location` model's history is its dataset (`dataset`: how to name it), not `this` (a view) -#}
  {% set existing = dataset if dataset is not none else load_cached_relation(this) %}
  {% if existing is not none and (dataset is not none or not existing.is_view) %}
    {{ dbt_merge.raise_merge_error("--full-refresh would rebuild the history table " ~ existing ~ " from the SELECT, "
        ~ "losing every past version it holds (a history cannot be rebuilt from its source), so it is refused. To "
        ~ "rebuild it anyway, set config(full_refresh=true) for that one run and remove it afterwards (while it is set, "
        ~ "every run rebuilds the table: dbt's full_refresh config overrides the flag); to run it incrementally with "
        ~ "the others, leave it out of --full-refresh (or set config(full_refresh=false)). The target was not "
        ~ "changed.") }}
  {% endif %}
{% endmacro %}
