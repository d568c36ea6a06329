{#-
  What the target's own definition forbids the merge's delete-then-insert write, as
  {generated: [names of generated columns], referenced_by: [tables whose FOREIGN KEY references
  the target]}:
  - a generated column is computed by the table: it is never written (nor may the SELECT have it);
  - a row another table references cannot be deleted, so the matched rows the merge updates are
    updated in place (an UPDATE) instead of deleted and inserted again (see duckdb__apply_changes).
-#}
{% macro target_write_limits(relation, definition) %}
  {{ return(adapter.dispatch('target_write_limits', 'dbt_merge')(relation, definition)) }}
{% endmacro %}

{% macro default__target_write_limits(relation, definition) %}
  {{ return({'generated': [], 'referenced_by': []}) }}
{% endmacro %}

{# DuckDB: from the table's definition (target_definition); the
   costlier catalog functions only when it has a generated column, or a PRIMARY KEY or UNIQUE
   constraint that a foreign key could reference (one of its own schema). #}
{% macro duckdb__target_write_limits(relation, definition) %}
  {% set limits = {'generated': [], 'referenced_by': []} %}
  {% set sql = definition.sql | lower if definition else '' %}
  {#- the table's names as target_definition matches them (lower() on both sides took a
      look-alike's columns or constraints, or missed `ΑΣ` and `İT`: red team helper-88) -#}
  {% if 'generated always' in sql %}
    {% for row in dbt_merge.run_sql("select column_name from duckdb_columns() where "
          ~ dbt_merge.duckdb_table_named(relation) ~ " and is_generated").rows %}
      {% do limits.generated.append(row[0]) %}
    {% endfor %}
  {% endif %}
  {% if definition and (definition.has_primary_key or 'unique' in sql) %}
    {% for row in dbt_merge.run_sql("select table_name from duckdb_constraints() where "
          ~ dbt_merge.duckdb_table_named(relation, 'referenced_table') ~ " and constraint_type = 'FOREIGN KEY'").rows %}
      {% do limits.referenced_by.append(row[0]) %}
    {% endfor %}
  {% endif %}
  {{ return(limits) }}
{% endmacro %}
