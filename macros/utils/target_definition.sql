{#- The target's definition as the catalog holds it, read once per run for target_write_limits:
    {sql (its CREATE statement), has_primary_key}, or none. -#}
{% macro target_definition(relation) %}
  {{ return(adapter.dispatch('target_definition', 'dbt_merge')(relation)) }}
{% endmacro %}

{% macro default__target_definition(relation) %}
  {{ return(none) }}
{% endmacro %}

{% macro duckdb__target_definition(relation) %}
  {% set rows = dbt_merge.run_sql("select sql, has_primary_key from duckdb_tables() where "
      ~ dbt_merge._duckdb_table_named(relation), 'dbt_merge_collations').rows %}
  {{ return({'sql': rows[0][0] or '', 'has_primary_key': rows[0][1]} if rows else none) }}
{% endmacro %}

{#- The condition on duckdb_tables() (or another catalog function) that picks `relation`. -#}
{% macro _duckdb_table_named(relation) %}
  {{ return("database_name = '" ~ relation.database | replace("'", "''") ~ "' and schema_name = '"
      ~ relation.schema | replace("'", "''") ~ "' and table_name = '" ~ relation.identifier | replace("'", "''") ~ "'") }}
{% endmacro %}
