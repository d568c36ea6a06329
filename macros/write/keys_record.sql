{#-
  The table property dbt_merge.keys-verified (merge_on_branch): the record that every key was
  present and held once at a snapshot, written after publishing and trusted by a later run only
  while its seal matches the table's state.
-#}

{#- The key columns as the record names them: a digest of their lower-case names, each with its
    length (so that a column named `a,b` and the key (a, b) differ). -#}
{% macro keys_signature(columns) %}
  {% set parts = [] %}
  {% for column in columns %}
    {% do parts.append((column | lower | length) ~ ':' ~ (column | lower)) %}
  {% endfor %}
  {{ return(local_md5(parts | join('|'))[:16]) }}
{% endmacro %}

{#- The record dbt_merge.keys-verified:
    'k3:<snapshot>:<format version>:<key names>:<key field ids>:<rows>:<seal>' (every key present
    and held once at that snapshot, in those fields; its live rows). The seal binds it to the
    table: a digest of the rest and of the snapshot's manifest list (a file of this table, named
    by Iceberg at that commit), which a value typed or copied by hand does not have. -#}
{% macro keys_record(snapshot, format, keys, fields, rows, manifest_list) %}
  {{ return('k3:' ~ snapshot ~ ':' ~ format ~ ':' ~ keys ~ ':' ~ fields ~ ':' ~ rows ~ ':'
      ~ dbt_merge.keys_record_seal(snapshot, format, keys, fields, rows, manifest_list)) }}
{% endmacro %}

{% macro keys_record_seal(snapshot, format, keys, fields, rows, manifest_list) %}
  {{ return(local_md5('dbt_merge.keys-verified|' ~ snapshot ~ '|' ~ format ~ '|' ~ keys ~ '|' ~ fields ~ '|' ~ rows
      ~ '|' ~ manifest_list)[:16]) }}
{% endmacro %}

{#- The record's fields ({snapshot, format, columns, fields, rows, seal}, text but rows), or none
    when the value is not such a record (an older package's record is not trusted). -#}
{% macro parse_keys_record(value) %}
  {% set found = modules.re.match('^k3:(-?[0-9]+):([0-9]+):([0-9a-f]{16}):([0-9]+(\\.[0-9]+)*):([0-9]+):([0-9a-f]{16})$', value) %}
  {% if not found %}
    {{ return(none) }}
  {% endif %}
  {{ return({'snapshot': found.group(1), 'format': found.group(2), 'columns': found.group(3), 'fields': found.group(4),
             'rows': found.group(6) | int, 'seal': found.group(7)}) }}
{% endmacro %}
