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

{#- ` and dst.k >= min and dst.k <= max` for each key whose range in the SELECT the source check
    read (plan.target_bounds, spark__measure_source), or ''. Added to a MERGE's ON clause, it
    changes no match (every source key lies in that range), and Spark pushes it into the scan of
    the target, which then reads only the files (and parquet row groups) whose statistics overlap
    it: a 1,000-row upsert into a 2M-row merge-on-read table whose keys lie in one of its two
    files took 0.70 s against 2.0 s (local[2], idle machine, the MERGE alone). Only where the MERGE
    has no WHEN NOT MATCHED BY SOURCE clause, and never in a MERGE INTO the table itself (a
    copy-on-write MERGE): Iceberg checks the commits made during a MERGE for conflicts only within
    the filters pushed into its scan, so another writer's append outside the range would be
    committed under it, unrefused, and the total the run computes would miss it (red team
    helper-36: 6 of 52 racing runs). The counts' join reads (classify_matched_keys_sql) and the
    write-once MERGE into the run's own branch (whose publication refuses any commit to main since
    the snapshot it was made at) take it. -#}
{% macro target_key_bounds(plan, dst) %}
  {%- set parts = [] -%}
  {%- for key, bound in (plan.get('target_bounds') or {}).items() -%}
    {%- set q = dst ~ '.' ~ dbt_merge.quote_identifier(key) -%}
    {%- do parts.append(q ~ ' >= ' ~ bound[0] ~ ' and ' ~ q ~ ' <= ' ~ bound[1]) -%}
  {%- endfor -%}
  {{ return((' and ' ~ parts | join(' and ')) if parts else '') }}
{% endmacro %}
