{#- Spark: the counts of count_matched_keys (narrow changes, plan.writes_source_rows) in one pass
    over the target: every target row, left-joined to the staged source (an increment is small:
    Spark broadcasts it and streams the target, as for the inner join of the changes view), so
    that the target's row count and, for full_merge, the rows the merge considers are sums over
    rows this join reads anyway, not scalar subqueries scanning the target again (two Spark jobs
    each). The source's keys are unique here (check_source_rows; for a large source the tests
    below, count_tests_keys, which fail the run before the counts are used), so each target row appears once
    and the matched ones are the rows of the changes view. Measured on a 100k-row Iceberg target,
    10k-row increment, local[2]: the count ran 6 Spark jobs instead of 8 (upsert) and 10
    (full_merge); paired runs, 200k-row target, 20k increment, loaded machine: full_merge -28%,
    upsert -4%. Wide changes: as elsewhere (default__count_changes). The source's row count is
    the source check's (plan.source_rows, same cached relation) when there is no deduplicate
    and no delete_condition: a scalar subquery here cost 2 Spark jobs.

    A source too large to broadcast (a snapshot of the table) is joined by shuffling both sides
    anyway: then the join is a full outer one, and the matched keys are the source's rows less
    those that matched no target row, instead of a count(distinct) over the join (its own
    shuffle). A matched target row has the key of the source row it matched, never NULL, and
    the source has no NULL key (checked), so the first key column of each side says which
    side a row of the join comes from. Measured on a 2M-row snapshot (issue 22, local[2], idle
    machine, counts alone): 1.6 s against 2.7-2.9 s. With a 200k-row increment (broadcast)
    the left join stays faster, 1.05 s against 1.2 s, and it streams the target where a full
    outer join would shuffle it. "Too large" is an estimate: at least 8 bytes per column and
    row against Spark's default broadcast threshold of 10 MiB (dbt var
    dbt_merge_spark_full_join_bytes; the tests set it to 0 to take this path on small data).
    It needs the source's exact row count from the source check (no deduplicate). -#}
{% macro spark__count_changes(plan) %}
  {% if not plan.writes_source_rows %}
    {{ return(dbt_merge.default__count_changes(plan)) }}
  {% endif %}
  {% set src = 'DBT_INTERNAL_SOURCE' %}
  {% set dst = 'DBT_INTERNAL_DEST' %}
  {% set action = dbt_merge.quote_identifier(plan.names.action) %}
  {% set unmatched = src ~ '.' ~ dbt_merge.quote_identifier(plan.key_columns[0]) ~ ' is null' %}
  {% set on_considered = dbt_merge.target_rows_condition(plan, false) %}
  {#- full outer join: the source's rows, counted by the source check, too many to broadcast -#}
  {% set checked_rows = plan.get('source_rows') if not plan.deduped else none %}
  {% set full_join = checked_rows is not none and (plan.keys_tested_by_count
                     or checked_rows * (plan.source_names | length) * 8 >= dbt_merge.full_join_bytes()) %}
  {#- with it, a row of the source that matched no target row -#}
  {% set source_only = src ~ '.' ~ dbt_merge.quote_identifier(plan.key_columns[0]) ~ ' is not null and '
      ~ dst ~ '.' ~ dbt_merge.quote_identifier(plan.key_columns[0]) ~ ' is null' %}
  {#- the flags below are of target rows -#}
  {% set considered = ('(' ~ on_considered ~ ') and not (' ~ source_only ~ ')') if full_join else on_considered %}
  {% set columns = [] %}
  {% for key in plan.key_columns %}
    {% do columns.append(src ~ '.' ~ dbt_merge.quote_identifier(key)) %}
  {% endfor %}
  {% do columns.append('case when ' ~ unmatched ~ (' or (' ~ source_only ~ ')' if full_join else '')
      ~ ' then null else ' ~ dbt_merge.matched_action_sql(plan) ~ ' end as ' ~ action) %}
  {% if full_join %}
    {% set flag_source_only = dbt_merge.quote_identifier(plan.names.row) %}
    {% do columns.append('case when ' ~ source_only ~ ' then 1 else 0 end as ' ~ flag_source_only) %}
  {% endif %}
  {#- flag columns named like the plan's other work columns, against the model's column names -#}
  {% set flag_considered = dbt_merge.quote_identifier(plan.names.rows) %}
  {% set flag_unmatched = dbt_merge.quote_identifier(plan.names.variants) %}
  {% set sums = [] %}
  {% if plan.actions.target_only == 'delete' %}
    {% set live = ' and ' ~ dbt_merge.live(plan) if plan.soft_delete else '' %}
    {% do columns.append('case when ' ~ considered ~ live ~ ' then 1 else 0 end as ' ~ flag_considered) %}
    {% do sums.append('coalesce(sum(' ~ flag_considered ~ '), 0) as considered') %}
    {% if plan.soft_delete %}
      {% do columns.append('case when ' ~ considered ~ live ~ ' and ' ~ unmatched ~ ' then 1 else 0 end as ' ~ flag_unmatched) %}
      {% do sums.append('coalesce(sum(' ~ flag_unmatched ~ '), 0) as unmatched') %}
    {% endif %}
  {% endif %}
  {#- the source's rows: counted by the source check when the count reads the same relation -#}
  {% set source_rows = checked_rows if not plan.delete_condition else none %}
  {% if source_rows is none %}
    {% set source_rows = "(select count(*) from " ~ (plan.deduped or plan.stage) ~ " as " ~ src
        ~ (" where not " ~ dbt_merge.delete_flag(plan) if plan.delete_condition else "") ~ ")" %}
  {% endif %}
  {% if full_join %}
    {% set matched_keys = checked_rows ~ " - coalesce(sum(" ~ flag_source_only ~ "), 0)" %}
    {% set target_rows = "count(*) - coalesce(sum(" ~ flag_source_only ~ "), 0)" %}
  {% else %}
    {% set matched_keys = "count(distinct case when " ~ action ~ " is not null then " ~ dbt_merge.key_value(plan) ~ " end)" %}
    {% set target_rows = "count(*)" %}
  {% endif %}
  {#- the source's keys unique, when the check left that to this count (keys_tested_by_count,
      always by the full outer join): pairs of columns that differ when a key repeats. A
      repeated key whose rows matched a target row makes that row appear more than once (the
      target's rows in the join outnumber the table's); one whose rows matched none repeats
      among the source-only rows, whose keys are then fewer than they -#}
  {% set key_tests = [] %}
  {% if plan.keys_tested_by_count %}
    {% do key_tests.append(target_rows) %}
    {% do key_tests.append("(select count(*) from " ~ plan.target ~ ")") %}
    {% do key_tests.append("coalesce(sum(" ~ flag_source_only ~ "), 0)") %}
    {% do key_tests.append("count(distinct case when " ~ flag_source_only ~ " = 1 then "
        ~ dbt_merge.key_value(plan) ~ " end)") %}
  {% endif %}
  {% set row = dbt_merge.run_sql(
      "select " ~ dbt_merge.action_sums(plan, ['U', 'N', 'H', 'C', 'K']) ~ ",
         " ~ matched_keys ~ " as matched_keys,
         " ~ source_rows ~ " as source_rows,
         " ~ target_rows ~ " as target_rows" ~ (", " ~ sums | join(', ') if sums else "")
         ~ (", " ~ key_tests | join(', ') if key_tests else "") ~ "
       from (
         select " ~ columns | join(', ') ~ "
         from " ~ plan.target ~ " as " ~ dst ~ "
         " ~ ("full" if full_join else "left") ~ " outer join " ~ (plan.deduped or plan.stage) ~ " as " ~ src ~ "
           on " ~ dbt_merge.key_match(plan.key_columns, src, dst) ~ " and " ~ on_considered ~ "
       ) as dbt_merge_changes", 'dbt_merge_count').rows[0] %}
  {% set values = row | list %}
  {% set counted = values[:values | length - key_tests | length] %}
  {% set tests = values[values | length - key_tests | length:] %}
  {% for i in range(0, tests | length, 2) if (tests[i] | int) != (tests[i + 1] | int) %}
    {% do dbt_merge.raise_repeated_keys(plan) %}
    {#- the detailed check found no key repeated: the table changed between the count's reads -#}
    {{ dbt_merge.raise_merge_error("the target " ~ plan.target ~ " changed while this run counted its changes "
        ~ "(another writer committed), so nothing was written. Running the model again is safe: it counts "
        ~ "the table as it is then.") }}
  {% endfor %}
  {{ return(dbt_merge.matched_key_counts(plan, counted)) }}
{% endmacro %}
