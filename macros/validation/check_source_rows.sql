{#- Run source_check_sql and raise the first problem found. Nothing has been written yet.
    Returns {repeats, adds}: repeats, the number of keys whose deduplicate candidates are
    identical repeats (0 otherwise); adds, what the check learnt for the plan, which the flow
    keeps there (measure_source's measurements, source_rows, target_bounds,
    keys_tested_by_count). keys_later: the count that follows tests the keys' uniqueness on its
    own join (count_tests_keys), so this check leaves out its count(distinct); the count raises
    raise_repeated_keys' error, still before anything is written. -#}
{% macro check_source_rows(plan, keys_later=false) %}
  {% do dbt_merge._check_conversions(plan) %}
  {% set adds = dbt_merge.measure_source(plan) %}
  {% set keys_later = keys_later and not plan.actions.dedupe %}
  {% do adds.update({'keys_tested_by_count': keys_later}) %}
  {#- the plan as the check reads it: with what it measured -#}
  {% set checked = dbt_merge.copy_with(plan, adds) %}
  {#- a SELECT measured empty (in this transaction) has no NULL and no repeated key -#}
  {% if checked.measured_rows == 0 and not plan.actions.dedupe %}
    {% do adds.update({'source_rows': 0, 'target_bounds': {}}) %}
    {{ return({'repeats': 0, 'adds': adds}) }}
  {% endif %}
  {% set row = dbt_merge.run_sql(dbt_merge.source_check_sql(checked, light=keys_later), 'dbt_merge_check').rows[0] %}
  {#- the rows of the staged SELECT (cached: the counts read the same rows), for the counts -#}
  {% do adds.update({'source_rows': none if plan.actions.dedupe else row[plan.key_columns | length + 1] | int}) %}
  {#- the SELECT's range of each bounded key (spark__measure_source), for target_key_bounds -#}
  {% set bounds = {} %}
  {% for key in checked.get('bounded_keys') or [] %}
    {% set at = plan.key_columns | length + 2 * loop.index %}
    {% if row[at] is not none and row[at + 1] is not none %}
      {% do bounds.update({key: [row[at] | int, row[at + 1] | int]}) %}
    {% endif %}
  {% endfor %}
  {% do adds.update({'target_bounds': bounds}) %}
  {% set checked = dbt_merge.copy_with(plan, adds) %}
  {% for key in plan.key_columns %}
    {% set nulls = row[loop.index0] | int %}
    {% if nulls > 0 %}
      {{ dbt_merge.raise_merge_error("unique_key column '" ~ key ~ "' is NULL in " ~ nulls
          ~ " row(s) of the model's SELECT. A key must identify a row: filter those rows out "
          ~ "or coalesce the key in the SELECT. The target was not changed.") }}
    {% endif %}
  {% endfor %}
  {% if not plan.actions.dedupe and row[plan.key_columns | length] | int > 0 %}
    {% do dbt_merge.raise_repeated_keys(checked) %}
  {% endif %}
  {% if plan.actions.dedupe %}
    {% do dbt_merge._raise_bad_keys(checked, row) %}
  {% endif %}
  {{ return({'repeats': row[plan.key_columns | length + 2] | int if plan.actions.dedupe else 0, 'adds': adds}) }}
{% endmacro %}

{#- Raise the error of a SELECT whose unique_key repeats (without deduplicate), with how many keys
    repeat and one of them, asked of the staged SELECT (source_check_sql's detailed form); returns
    if that finds no key repeated. -#}
{% macro raise_repeated_keys(plan) %}
  {% do dbt_merge._raise_bad_keys(plan, dbt_merge.run_sql(dbt_merge.source_check_sql(plan, detail=true),
                                                          'dbt_merge_check').rows[0]) %}
{% endmacro %}

{#- Raise the error of the bad keys of a check row (bad_keys, bad_example at the keys' count),
    if there are any. -#}
{% macro _raise_bad_keys(plan, row) %}
  {% set bad_keys = row[plan.key_columns | length] | int %}
  {% if bad_keys > 0 %}
    {% set example = '(' ~ plan.key_columns | join(', ') ~ ') = (' ~ row[plan.key_columns | length + 1] ~ ')' %}
    {% set converted = [] %}
    {% for c in plan.conversions if c.column | lower in plan.key_columns | map('lower') | list %}
      {% do converted.append(c.column ~ ' as ' ~ c.target_type) %}
    {% endfor %}
    {% if converted %}
      {% set example = example ~ ' (keys compared as the target stores them: ' ~ converted | join(', ') ~ ')' %}
    {% endif %}
    {% if not plan.actions.dedupe %}
      {% set message = bad_keys ~ " unique_key value(s) occur more than once in the model's SELECT, e.g. "
          ~ example ~ ". Make the key unique in the SELECT, fix unique_key, or "
          ~ ("set dedup_order_by on this model (e.g. dedup_order_by='" ~ (plan.history.updated_at or '<column>')
             ~ " desc'): strategy 'history' then keeps one row per key, the first in that order" if plan.history
             else "use strategy='deduplicate' with dedup_order_by to keep one row per key") ~ "." %}
    {% elif plan.order_by %}
      {% set message = bad_keys ~ " key(s) have different rows that tie on dedup_order_by ("
          ~ dbt_merge.as_list(config.get('dedup_order_by')) | join(', ') ~ "), e.g. " ~ example
          ~ ". Add a tie-breaking column to dedup_order_by so one row per key wins." %}
    {% else %}
      {% set message = bad_keys ~ " key(s) have rows that differ and no dedup_order_by is set, e.g. "
          ~ example ~ ". Set dedup_order_by (e.g. 'updated_at desc') to choose the row to keep." %}
    {% endif %}
    {{ dbt_merge.raise_merge_error(message ~ " The target was not changed.") }}
  {% endif %}
{% endmacro %}

{#- Refuse values of the SELECT that the target's column type cannot hold (converted_source_sql
    turns them into NULL): a key would be lost or merged with another, a value changed. -#}
{% macro _check_conversions(plan) %}
  {% if not plan.conversions %}
    {{ return(none) }}
  {% endif %}
  {% set parts = [] %}
  {% for c in plan.conversions %}
    {% set lost = dbt_merge.quote_identifier(c.column) ~ ' is not null and ' ~ c.sql ~ ' is null' %}
    {% do parts.append('coalesce(sum(case when ' ~ lost ~ ' then 1 else 0 end), 0)') %}
    {% do parts.append('min(case when ' ~ lost ~ ' then cast(' ~ dbt_merge.quote_identifier(c.column) ~ ' as string) end)') %}
  {% endfor %}
  {% set row = dbt_merge.run_sql('select ' ~ parts | join(', ') ~ ' from ' ~ plan.raw_stage, 'dbt_merge_check').rows[0] %}
  {% for c in plan.conversions %}
    {% if row[loop.index0 * 2] | int > 0 %}
      {{ dbt_merge.raise_merge_error("column '" ~ c.column ~ "' has " ~ row[loop.index0 * 2] | int ~ " value(s) that "
          ~ "cannot be stored in the target's type " ~ c.target_type ~ " (e.g. '" ~ row[loop.index0 * 2 + 1] ~ "'). "
          ~ "Convert or filter them in the SELECT, or change the column's type (on_schema_change='sync_all_columns' "
          ~ "or --full-refresh). The target was not changed.") }}
    {% endif %}
  {% endfor %}
{% endmacro %}
