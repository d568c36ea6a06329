{#- The columns a SQL condition reads through the merge's aliases: a list of
    {'alias': 'DBT_INTERNAL_SOURCE' or 'DBT_INTERNAL_DEST', 'column': name}. String literals and
    quoted identifiers are skipped, so a column *named* DBT_INTERNAL_SOURCE
    (DBT_INTERNAL_DEST."DBT_INTERNAL_SOURCE") is a column, not the alias. Quoted column names
    ("a b", `a b`) are returned as written. -#}
{% macro alias_references(condition) %}
  {% set quoted = "'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`(?:[^`]|``)*`" %}
  {% set column = '("(?:[^"]|"")+"|`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_$]*)' %}
  {% set reference = '(?<![A-Za-z0-9_$.])(DBT_INTERNAL_SOURCE|DBT_INTERNAL_DEST)\\s*\\.\\s*' ~ column %}
  {% set found = [] %}
  {% for m in modules.re.finditer(reference ~ '|' ~ quoted, condition or '', modules.re.I) %}
    {% if m.group(1) %}
      {% set name = m.group(2) %}
      {% if name.startswith('"') %}{% set name = name[1:-1] | replace('""', '"') %}
      {% elif name.startswith('`') %}{% set name = name[1:-1] | replace('``', '`') %}{% endif %}
      {% do found.append({'alias': m.group(1) | upper, 'column': name}) %}
    {% endif %}
  {% endfor %}
  {{ return(found) }}
{% endmacro %}

{#- Whether `condition` reads a column through `alias`. -#}
{% macro names_alias(condition, alias) %}
  {{ return(dbt_merge.alias_references(condition) | selectattr('alias', 'equalto', alias) | list | length > 0) }}
{% endmacro %}
