{#-
  Turn the checked config plus the columns the data really has into the plan every engine
  renders. Raises, naming the column, when a configured column does not exist.

    source_names: column names of the staged SELECT
    target_names: column names of the existing table, or none when the table is (re)built
-#}
{% macro build_merge_plan(cfg, relations, source_names, target_names) %}
  {% set target_names = source_names if target_names is none else target_names %}

  {% set key_columns = [] %}
  {% for key in cfg.unique_key %}
    {% set in_source = dbt_merge._find_column(key, source_names) %}
    {% if in_source is none %}
      {{ dbt_merge.raise_merge_error("unique_key column '" ~ key ~ "' is not in the model's SELECT (columns: "
          ~ source_names | join(', ') ~ "). Add it to the SELECT or fix unique_key.") }}
    {% endif %}
    {% if dbt_merge._find_column(key, target_names) is none %}
      {{ dbt_merge.raise_merge_error("unique_key column '" ~ key ~ "' is not in the target table "
          ~ relations.target ~ " (columns: " ~ target_names | join(', ') ~ "). "
          ~ "Run with --full-refresh to rebuild the table with the new key.") }}
    {% endif %}
    {% do key_columns.append(in_source) %}
  {% endfor %}
  {% set key_lower = key_columns | map('lower') | list %}

  {% set order_by = [] %}
  {% for term in cfg.dedup_order_by %}
    {% do order_by.append(dbt_merge._parse_order_term(term, source_names, key_lower)) %}
  {% endfor %}

  {#- Columns a matched row may change: target columns the SELECT has, minus the keys, narrowed
      by merge_update_columns / merge_exclude_columns. -#}
  {% set updatable = [] %}
  {% for col in target_names %}
    {% if col | lower not in key_lower and dbt_merge._find_column(col, source_names) is not none %}
      {% do updatable.append(col) %}
    {% endif %}
  {% endfor %}
  {% set chosen = cfg.update_columns if cfg.update_columns is not none else cfg.exclude_columns %}
  {% set option = 'merge_update_columns' if cfg.update_columns is not none else 'merge_exclude_columns' %}
  {% set chosen_lower = [] %}
  {% for col in chosen %}
    {% if dbt_merge._find_column(col, updatable) is none %}
      {{ dbt_merge.raise_merge_error(option ~ " names column '" ~ col ~ "', which is not a non-key column "
          ~ "of both the SELECT and the target (those are: " ~ updatable | join(', ') ~ "). Fix " ~ option ~ ".") }}
    {% endif %}
    {% do chosen_lower.append(col | lower) %}
  {% endfor %}
  {% set update_columns = [] %}
  {% for col in updatable %}
    {% if (cfg.update_columns is not none and col | lower in chosen_lower)
          or (cfg.update_columns is none and col | lower not in chosen_lower) %}
      {% do update_columns.append(col) %}
    {% endif %}
  {% endfor %}

  {% set actions = cfg.actions %}
  {#- True when every row the merge writes is a source row as it is: a matched row is either left
      alone or gets every non-key target column from the source. Engines can then write straight
      from the source and classify only the matched keys (see classify_matched_keys_sql). -#}
  {% set non_key_count = target_names | map('lower') | reject('in', key_lower) | list | length %}
  {% set writes_source_rows = actions.matched != 'update' or update_columns | length == non_key_count %}
  {% set join_type = 'full outer' if actions.target_only == 'delete'
                     else ('inner' if actions.source_only == 'skip' else 'left outer') %}
  {{ return({
    'strategy': cfg.strategy,
    'actions': actions,
    'join_type': join_type,
    'key_columns': key_columns,
    'source_names': source_names,
    'target_names': target_names,
    'update_columns': update_columns if actions.matched == 'update' else [],
    'writes_source_rows': writes_source_rows,
    'order_by': order_by,
    'predicates': cfg.predicates,
    'target': relations.target,
    'stage': relations.stage,
    'deduped': relations.deduped,
    'changes': relations.changes,
  }) }}
{% endmacro %}


{#- The column of `names` equal to `name` ignoring case (both engines fold identifiers), or none. -#}
{% macro _find_column(name, names) %}
  {% for candidate in names %}
    {% if candidate | lower == name | lower %}
      {{ return(candidate) }}
    {% endif %}
  {% endfor %}
  {{ return(none) }}
{% endmacro %}


{#- 'col', 'col desc', 'col asc' (a column name may contain spaces) -> {column, descending}. -#}
{% macro _parse_order_term(term, source_names, key_lower) %}
  {% set column = dbt_merge._find_column(term, source_names) %}
  {% set descending = false %}
  {% if column is none %}
    {% set words = term.split() %}
    {% set last = words[-1] | lower if words else '' %}
    {% if last in ['asc', 'desc'] and words | length > 1 %}
      {% set descending = last == 'desc' %}
      {% set column = dbt_merge._find_column(term[:term | length - last | length] | trim, source_names) %}
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
