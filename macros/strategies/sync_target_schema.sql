{#-
  on_schema_change, as dbt's incremental models apply it. Returns the target's column names
  after the change. Types are compared as the engine reports them.
-#}
{% macro sync_target_schema(on_schema_change, target, source_columns, target_columns) %}
  {% set target_names = target_columns | map(attribute='name') | list %}
  {% if on_schema_change == 'ignore' %}
    {{ return(target_names) }}
  {% endif %}
  {% set source_names = source_columns | map(attribute='name') | list %}
  {% set added = [] %}
  {% set removed = [] %}
  {% set retyped = [] %}
  {% for col in source_columns %}
    {% set match = target_columns | selectattr('name', 'equalto', dbt_merge._find_column(col.name, target_names)) | list %}
    {% if not match %}
      {% do added.append(col) %}
    {% elif match[0].data_type | lower != col.data_type | lower %}
      {% do retyped.append({'column': match[0], 'new_type': col.data_type}) %}
    {% endif %}
  {% endfor %}
  {% for col in target_columns %}
    {% if dbt_merge._find_column(col.name, source_names) is none %}
      {% do removed.append(col) %}
    {% endif %}
  {% endfor %}
  {% if not (added or removed or retyped) %}
    {{ return(target_names) }}
  {% endif %}

  {% set changes = [] %}
  {% if added %}{% do changes.append('new in the SELECT: ' ~ added | map(attribute='name') | join(', ')) %}{% endif %}
  {% if removed %}{% do changes.append('missing from the SELECT: ' ~ removed | map(attribute='name') | join(', ')) %}{% endif %}
  {% for r in retyped %}{% do changes.append('type of ' ~ r.column.name ~ ' ' ~ r.column.data_type ~ ' -> ' ~ r.new_type) %}{% endfor %}
  {% if on_schema_change == 'fail' %}
    {{ dbt_merge.raise_merge_error("the SELECT's columns differ from " ~ target ~ " (" ~ changes | join('; ')
        ~ ") and on_schema_change is 'fail'. Set on_schema_change to 'append_new_columns' or "
        ~ "'sync_all_columns', or run with --full-refresh. The target was not changed.") }}
  {% endif %}

  {% do log('dbt_merge ' ~ model.name ~ ': on_schema_change=' ~ on_schema_change ~ ': ' ~ changes | join('; '), info=true) %}
  {% do dbt_merge.alter_target_columns(target, add=added) %}
  {% set names = target_names + added | map(attribute='name') | list %}
  {% if on_schema_change == 'sync_all_columns' %}
    {% do dbt_merge.alter_target_columns(target, remove=removed, retype=retyped) %}
    {% set removed_names = removed | map(attribute='name') | list %}
    {% set names = names | reject('in', removed_names) | list %}
  {% endif %}
  {{ return(names) }}
{% endmacro %}
