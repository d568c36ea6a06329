{#- {lower column name: collation} for the columns declared with a collation, from the target's
    definition (target_definition). -#}
{% macro target_collations(definition) %}
  {{ return(adapter.dispatch('target_collations', 'dbt_merge')(definition)) }}
{% endmacro %}

{% macro default__target_collations(definition) %}
  {{ return({}) }}
{% endmacro %}

{# DuckDB reports a collated column's type as plain VARCHAR; the collation is only in the
   table's CREATE statement. #}
{% macro duckdb__target_collations(definition) %}
  {% set collations = {} %}
  {% set sql = definition.sql if definition else '' %}
  {% if 'collate' in sql | lower %}
    {% set definitions = sql[(sql.index('(') + 1):] %}
    {% for m in modules.re.finditer('(?:^|,)\\s*("(?:[^"]|"")+"|[^\\s,"]+)\\s+[^,]*?\\bCOLLATE\\s+([A-Za-z_][A-Za-z0-9_.]*)', definitions, modules.re.I) %}
      {% set name = m.group(1) %}
      {% set name = name[1:-1] | replace('""', '"') if name.startswith('"') else name %}
      {% do collations.update({name | lower: m.group(2)}) %}
    {% endfor %}
  {% endif %}
  {{ return(collations) }}
{% endmacro %}
