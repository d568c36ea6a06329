{#- {lower column name: collation} for the columns of `relation` declared with a collation. -#}
{% macro target_collations(relation) %}
  {{ return(adapter.dispatch('target_collations', 'dbt_merge')(relation)) }}
{% endmacro %}

{% macro default__target_collations(relation) %}
  {{ return({}) }}
{% endmacro %}

{# DuckDB reports a collated column's type as plain VARCHAR; the collation is only in the
   table's CREATE statement. #}
{% macro duckdb__target_collations(relation) %}
  {% set rows = dbt_merge.run_sql("select sql from duckdb_tables() where database_name = '"
      ~ relation.database | replace("'", "''") ~ "' and schema_name = '" ~ relation.schema | replace("'", "''")
      ~ "' and table_name = '" ~ relation.identifier | replace("'", "''") ~ "'", 'dbt_merge_collations').rows %}
  {% set collations = {} %}
  {% if rows and 'collate' in (rows[0][0] or '') | lower %}
    {% set definitions = rows[0][0][(rows[0][0].index('(') + 1):] %}
    {% for m in modules.re.finditer('(?:^|,)\\s*("(?:[^"]|"")+"|[^\\s,"]+)\\s+[^,]*?\\bCOLLATE\\s+([A-Za-z_][A-Za-z0-9_.]*)', definitions, modules.re.I) %}
      {% set name = m.group(1) %}
      {% set name = name[1:-1] | replace('""', '"') if name.startswith('"') else name %}
      {% do collations.update({name | lower: m.group(2)}) %}
    {% endfor %}
  {% endif %}
  {{ return(collations) }}
{% endmacro %}
