{#-
  Keys and values are judged byte for byte. A merge compares them to match keys, to find the
  keys a SELECT repeats (GROUP BY, count(distinct ...), DISTINCT, a window's PARTITION BY), to
  tell a changed row from an unchanged one and, on Parquet datasets, to prune files by their
  statistics. An engine may compare text by a collation instead: on DuckDB a column declared
  `COLLATE NOCASE` (or any collation), a SELECT's value that carries one, and the connection's
  `default_collation` make 'a' and 'A' equal, in nested values too. Judged that way a key 'A'
  would update the row of key 'a' (or a SELECT holding both be refused as a repeat), a case-only
  correction ('acme corp' -> 'Acme Corp') would count as unchanged and never be written, and a
  Parquet file holding key 'a' would be pruned as unable to hold it (its statistics are byte
  order). DuckDB's own PRIMARY KEY and UNIQUE constraints treat 'a' and 'A' as two keys.

  compare_kinds(columns): {lower column name: kind} for the columns whose values some
  collation could compare: 'text' (VARCHAR and its aliases), 'json', 'nested' (a STRUCT, LIST,
  ARRAY, MAP or UNION holding text). `columns` are dbt Columns as the merge compares them (the
  SELECT's, converted to the target's types). Engines without collations return {}.

  compared_value(compare, column, expr): `expr` (a value of `column`) as the merge compares,
  groups and counts it, given compare_kinds' map: on DuckDB text and JSON as VARCHAR under the
  binary collation `c` (which adds no expression: a plan with it is the plan without any
  collation), a nested value as its binary sort key (create_sort_key, which no collation
  enters). `expr` may be a NULL literal.
-#}
{% macro compare_kinds(columns) %}
  {{ return(adapter.dispatch('compare_kinds', 'dbt_merge')(columns)) }}
{% endmacro %}

{% macro default__compare_kinds(columns) %}
  {{ return({}) }}
{% endmacro %}

{% macro duckdb__compare_kinds(columns) %}
  {% set kinds = {} %}
  {% for col in columns %}
    {#- a type as DuckDB names it, less a collation clause ('VARCHAR COLLATE NOCASE') -#}
    {% set t = modules.re.sub('\\s+COLLATE\\s+\\S+$', '', (col.dtype or '') | trim, flags=modules.re.I) | upper %}
    {% set nested = t.startswith('STRUCT') or t.startswith('MAP') or t.startswith('UNION') or t.endswith(']') %}
    {% if t in ['VARCHAR', 'TEXT', 'STRING', 'CHAR', 'BPCHAR', 'NVARCHAR'] or modules.re.match('^(VAR)?CHAR\\s*\\(', t) %}
      {% do kinds.update({col.name | lower: 'text'}) %}
    {% elif t == 'JSON' %}
      {% do kinds.update({col.name | lower: 'json'}) %}
    {% elif nested and modules.re.search('\\b(VARCHAR|JSON|TEXT|STRING|BPCHAR)\\b', t) %}
      {% do kinds.update({col.name | lower: 'nested'}) %}
    {% endif %}
  {% endfor %}
  {{ return(kinds) }}
{% endmacro %}

{% macro compared_value(compare, column, expr) %}
  {{ return(adapter.dispatch('compared_value', 'dbt_merge')(compare, column, expr)) }}
{% endmacro %}

{% macro default__compared_value(compare, column, expr) %}
  {{ return(expr) }}
{% endmacro %}

{% macro duckdb__compared_value(compare, column, expr) %}
  {% set kind = (compare or {}).get(column | lower) %}
  {% if kind in ['text', 'json'] %}
    {{ return('(cast(' ~ expr ~ ' as varchar) collate c)') }}
  {% elif kind == 'nested' %}
    {{ return("create_sort_key(" ~ expr ~ ", 'ASC NULLS LAST')") }}
  {% endif %}
  {{ return(expr) }}
{% endmacro %}

{#- compared_value of `names` (columns of the relation aliased `alias`, or unqualified), joined
    by ', ': a GROUP BY, PARTITION BY or DISTINCT ON list. -#}
{% macro compared_list(compare, names, alias=none) %}
  {% set parts = [] %}
  {% for name in names %}
    {% do parts.append(dbt_merge.compared_value(compare, name, (alias ~ '.' if alias else '') ~ dbt_merge.quote_identifier(name))) %}
  {% endfor %}
  {{ return(parts | join(', ')) }}
{% endmacro %}
