{#- `left.k1 = right.k1 and left.k2 = right.k2`; keys are never NULL (validated), so `=` is exact.
    `compare`: the plan's compare_kinds, to judge keys byte for byte (compared_value). -#}
{% macro key_match(key_columns, left, right, compare=none) %}
  {% set parts = [] %}
  {% for key in key_columns %}
    {% set q = dbt_merge.quote_identifier(key) %}
    {% do parts.append(dbt_merge.compared_value(compare, key, left ~ '.' ~ q) ~ ' = '
                       ~ dbt_merge.compared_value(compare, key, right ~ '.' ~ q)) %}
  {% endfor %}
  {{ return(parts | join(' and ')) }}
{% endmacro %}

{#- `exists (...)`: `relation` (filtered by `where`, a condition on its own columns) holds a row
    whose `columns` equal those of the outer row aliased `outer`. The subquery sees only
    renamed copies of those columns, so a model column named like the outer alias (a column
    `DBT_INTERNAL_DEST` in the SELECT) cannot capture `outer.<column>`: Spark resolves a name
    in the subquery's own relation first, and would read `DBT_INTERNAL_DEST.id` as a field of that
    column. `op`: '=' (keys, never NULL) or '<=>' (NULL-safe, for partition values). `compare`:
    the plan's compare_kinds (compared_value). -#}
{% macro exists_match(relation, columns, outer, where=none, op='=', compare=none) %}
  {%- set inner = [] -%}
  {%- set match = [] -%}
  {%- for column in columns -%}
    {%- do inner.append(dbt_merge.quote_identifier(column) ~ ' as dbt_merge_m' ~ loop.index) -%}
    {%- do match.append(dbt_merge.compared_value(compare, column, 'dbt_merge_match.dbt_merge_m' ~ loop.index) ~ ' ' ~ op ~ ' '
                        ~ dbt_merge.compared_value(compare, column, outer ~ '.' ~ dbt_merge.quote_identifier(column))) -%}
  {%- endfor -%}
  {{ return('exists (select 1 from (select ' ~ inner | join(', ') ~ ' from ' ~ relation
      ~ (' where ' ~ where if where else '') ~ ') as dbt_merge_match where ' ~ match | join(' and ') ~ ')') }}
{% endmacro %}
