{#-
  Config keys nothing reads. A key is known when it is one of dbt's declared node config fields
  (an attribute of the config object; the keys a user adds, anywhere, are extras that are not),
  one of dbt's own keys kept as extras, one the duckdb or spark adapter reads (both, so a
  project targeting both engines stays quiet), or the package's (merge_config_keys). Keys set
  to none are skipped.
  - A key within edit distance 2 of a known one (case aside) is a misspelling: the model fails
    with a compiler error naming the key and the fix, since the key would be ignored and the
    model would run as something else (`stratgy='full_merge'` as an upsert). validate_merge_config
    calls this first, so `unique_keys` is named before unique_key is found missing.
  - Any other unknown key is a warning (exceptions.warn: dbt's JinjaLogWarning, which
    --warn-error and --warn-error-options turn into an error). dbt's `WARN=` counts only tests
    and freshness checks at severity warn (a model's result is never `warn`), so it cannot
    count this one.
  The Python doors never get here with an unknown key: dbt_merge.options refuses every keyword
  it does not know.
-#}
{% macro check_config_keys() %}
  {% if config.model is not defined %}
    {#- outside dbt (the Parquet-dataset API renders these macros with its own options) -#}
    {{ return(none) }}
  {% endif %}
  {% set node_config = config.model.config %}
  {% set known = dbt_merge.merge_config_keys() + dbt_merge._engine_config_keys() %}
  {% set declared = [] %}
  {% set unknown = [] %}
  {% for key in node_config %}
    {% if (node_config | attr(key)) is not undefined %}
      {% do declared.append(key) %}
    {% elif key not in known and node_config.get(key) is not none %}
      {% do unknown.append(key) %}
    {% endif %}
  {% endfor %}
  {% set misspelt = [] %}
  {% for key in unknown %}
    {% set closest = dbt_merge._closest_key(key, known + declared) %}
    {% if closest and dbt_merge.edit_distance(key | lower, closest) <= 2 %}
      {% do misspelt.append("unknown config key '" ~ key ~ "' (did you mean '" ~ closest ~ "'?). "
          ~ "It would be ignored, so the model is not run: rename it to '" ~ closest ~ "', or "
          ~ "move a custom value under meta.") %}
    {% else %}
      {% do exceptions.warn(dbt_merge.merge_error_prefix() ~ "unknown config key '" ~ key ~ "'"
          ~ (" (did you mean '" ~ closest ~ "'?)" if closest else "")
          ~ ". It has no effect: fix its name, or move a custom value under meta.") %}
    {% endif %}
  {% endfor %}
  {% if misspelt %}
    {{ dbt_merge.raise_merge_error(misspelt | join(' ')) }}
  {% endif %}
{% endmacro %}


{#- dbt's node config keys that are not declared fields, then the keys dbt-duckdb and dbt-spark
    read in their materializations (their AdapterSpecificConfigs and config.get calls). -#}
{% macro _engine_config_keys() %}
  {{ return([
    'sql_header', 'catalog_name', 'incremental_strategy', 'incremental_predicates',
    'file_format', 'location_root', 'partition_by', 'clustered_by', 'buckets', 'options',
    'tblproperties', 'indexes', 'location', 'format', 'delimiter', 'glue_register',
    'glue_database', 'plugin', 'partitioned_by', 'partition_columns', 'sort_by', 'sorted_by',
    'csv_read_options', 'json_read_options', 'parquet_read_options', 'parameters',
    'merge_clauses', 'merge_insert_condition', 'merge_on_using_columns',
    'merge_returning_columns', 'merge_update_set_expressions',
  ]) }}
{% endmacro %}


{#- The known key closest to `key` by edit distance, if close enough to be a typo of it. -#}
{% macro _closest_key(key, known) %}
  {% set ns = namespace(best=none, distance=none) %}
  {% set limit = [2, (key | length) // 3] | max %}
  {% for candidate in known | unique %}
    {% if ((candidate | length) - (key | length)) | abs <= limit %}
      {% set d = dbt_merge.edit_distance(key | lower, candidate) %}
      {% if d <= limit and (ns.distance is none or d < ns.distance) %}
        {% set ns.best = candidate %}
        {% set ns.distance = d %}
      {% endif %}
    {% endif %}
  {% endfor %}
  {{ return(ns.best) }}
{% endmacro %}
