{#- The target's definition as the catalog holds it, read once per run for target_write_limits:
    {sql (its CREATE statement), has_primary_key}, or none. -#}
{% macro target_definition(relation) %}
  {#- a writer's target (a Parquet dataset) is no catalog table: a table of the same name is
      another one -#}
  {% if dbt_merge.target_writer() is not none %}
    {{ return(none) }}
  {% endif %}
  {{ return(adapter.dispatch('target_definition', 'dbt_merge')(relation)) }}
{% endmacro %}

{% macro default__target_definition(relation) %}
  {{ return(none) }}
{% endmacro %}

{% macro duckdb__target_definition(relation) %}
  {% set rows = dbt_merge.run_sql("select sql, has_primary_key from duckdb_tables() where "
      ~ dbt_merge.duckdb_table_named(relation), 'dbt_merge_collations').rows %}
  {{ return({'sql': rows[0][0] or '', 'has_primary_key': rows[0][1]} if rows else none) }}
{% endmacro %}

{#- The condition on duckdb_tables() (duckdb_columns(), and with table_column='referenced_table'
    duckdb_constraints()) that picks `relation` as DuckDB's catalog finds a name: the
    case of A-Z folded, every other character byte for byte (`collate c`), whatever the
    connection's default_collation. Under 'noaccent' or 'nocase' the names `cafe` and `café`, or
    `Ä` and `ä` (two tables: DuckDB folds A-Z only), were one name, and the other table's
    definition could be read (red team helper-87). -#}
{% macro duckdb_table_named(relation, table_column='table_name') %}
  {% set fold = "'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'" %}
  {% set parts = [] %}
  {% for column, name in [['database_name', relation.database], ['schema_name', relation.schema],
                          [table_column, relation.identifier]] %}
    {% do parts.append("(translate(" ~ column ~ ", " ~ fold ~ ") collate c) = translate("
                       ~ dbt_merge.sql_string(name) ~ ", " ~ fold ~ ")") %}
  {% endfor %}
  {{ return(parts | join(' and ')) }}
{% endmacro %}
