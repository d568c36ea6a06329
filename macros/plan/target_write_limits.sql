{#-
  What the target's own definition forbids the merge's delete-then-insert write, as
  {generated: [names of generated columns], referenced_by: [tables whose FOREIGN KEY references
  the target]}:
  - a generated column is computed by the table: it is never written (nor may the SELECT have it);
  - a row another table references cannot be deleted, so the matched rows the merge updates are
    updated in place (an UPDATE) instead of deleted and inserted again (see duckdb__apply_changes).
-#}
{% macro target_write_limits(relation) %}
  {{ return(adapter.dispatch('target_write_limits', 'dbt_merge')(relation)) }}
{% endmacro %}

{% macro default__target_write_limits(relation) %}
  {{ return({'generated': [], 'referenced_by': []}) }}
{% endmacro %}

{# DuckDB: one query of the catalog. A foreign key references a table of its own schema. #}
{% macro duckdb__target_write_limits(relation) %}
  {% set database = dbt_merge._sql_string(relation.database | lower) %}
  {% set schema = dbt_merge._sql_string(relation.schema | lower) %}
  {% set table = dbt_merge._sql_string(relation.identifier | lower) %}
  {% set rows = dbt_merge.run_sql(
      "select 'generated', column_name from information_schema.columns where lower(table_catalog) = " ~ database
      ~ " and lower(table_schema) = " ~ schema ~ " and lower(table_name) = " ~ table ~ " and is_generated = 'ALWAYS'"
      ~ " union all select 'referenced', table_name from duckdb_constraints() where constraint_type = 'FOREIGN KEY'"
      ~ " and lower(database_name) = " ~ database ~ " and lower(schema_name) = " ~ schema
      ~ " and lower(referenced_table) = " ~ table, 'dbt_merge_write_limits').rows %}
  {% set limits = {'generated': [], 'referenced_by': []} %}
  {% for kind, name in rows %}
    {% do limits[kind if kind == 'generated' else 'referenced_by'].append(name) %}
  {% endfor %}
  {{ return(limits) }}
{% endmacro %}
