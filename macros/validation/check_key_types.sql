{#-
  Refuse a key whose type family differs between the SELECT and the target (a string against a
  number, a date or a boolean, ...). The engine would compare them after an implicit cast, so
  '02' and '2' in the SELECT both match the target's 2: two source keys for one target row, and
  duplicate keys after the merge. Integer against decimal, or timestamp against date, is left to
  the engine. Skipped with on_schema_change='sync_all_columns', which retypes the target first.
-#}
{% macro check_key_types(plan, source_columns, target_columns, on_schema_change) %}
  {% if on_schema_change == 'sync_all_columns' %}
    {{ return(none) }}
  {% endif %}
  {% for key in plan.key_columns %}
    {% set source_col = source_columns | selectattr('name', 'equalto', key) | first %}
    {% set target_col = target_columns | selectattr('name', 'equalto',
                          dbt_merge._find_column(key, target_columns | map(attribute='name') | list)) | first %}
    {% set source_family = dbt_merge._type_family(source_col.dtype) %}
    {% set target_family = dbt_merge._type_family(target_col.dtype) %}
    {% if source_family != target_family and 'other' not in [source_family, target_family] %}
      {{ dbt_merge.raise_merge_error("unique_key column '" ~ key ~ "' has type " ~ source_col.dtype
          ~ " in the model's SELECT but " ~ target_col.dtype ~ " in the target " ~ plan.target
          ~ ": keys would be compared after an implicit cast, so two different source keys (e.g. '02' and '2') "
          ~ "could match one target row. Cast the key in the SELECT to " ~ target_col.dtype
          ~ ". The target was not changed.") }}
    {% endif %}
  {% endfor %}
{% endmacro %}

{#- string | number | temporal | boolean | other, from a type name as DuckDB or Spark reports it. -#}
{% macro _type_family(data_type) %}
  {% set t = data_type | lower | trim %}
  {% for family, prefixes in [
        ('string', ['varchar', 'char', 'text', 'string', 'character', 'bpchar']),
        ('number', ['tinyint', 'smallint', 'int', 'bigint', 'hugeint', 'uinteger', 'ubigint', 'usmallint',
                    'utinyint', 'uhugeint', 'integer', 'long', 'short', 'byte', 'decimal', 'numeric',
                    'double', 'float', 'real']),
        ('temporal', ['date', 'timestamp', 'time', 'datetime']),
        ('boolean', ['bool', 'boolean']),
      ] %}
    {% for prefix in prefixes %}
      {% if t == prefix or t.startswith(prefix ~ '(') or t.startswith(prefix ~ ' ') or t.startswith(prefix ~ '_') %}
        {{ return(family) }}
      {% endif %}
    {% endfor %}
  {% endfor %}
  {{ return('other') }}
{% endmacro %}
