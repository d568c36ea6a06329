{#- strategy='history': the statistics from the changes (classify_history_sql), in one query over
    them, before anything is written:
      inserted   keys given their first version (new keys, and keys back after 'invalidate')
      updated    keys whose current version is closed and replaced (changed, or back after a
                 'new_record' deletion)
      deleted    keys closed (hard_deletes): 'invalidate' closes them, 'new_record' closes them
                 and opens a deletion record
      unchanged  the SELECT's other rows
      held_back  the late rows of the SELECT ('H'), and the deletions held back ('L': a current
                 version starting at or after the run's time, which closing would leave valid
                 for no time)
      total      current versions afterwards (deletion records included: they are current);
      versions   the table's rows afterwards.
    With the raw class counts (I, U, R, D, H, L) for the write. -#}
{% macro count_history(plan, target_state) %}
  {% set action = dbt_merge.quote_identifier(plan.names.action) %}
  {% set checked_rows = plan.get('source_rows') if not plan.deduped else none %}
  {% set row = dbt_merge.run_sql("select " ~ dbt_merge._history_sums(action) ~ ", "
      ~ (checked_rows if checked_rows is not none else "(select count(*) from " ~ plan.deduped ~ ")")
      ~ " from " ~ plan.changes, 'dbt_merge_count').rows[0] %}
  {% set i, u, r, d, held, kept, source_rows = row[0] | int, row[1] | int, row[2] | int, row[3] | int, row[4] | int,
                                               row[5] | int, row[6] | int %}
  {% set new_record = plan.history.hard_deletes == 'new_record' %}
  {{ return({
    'inserted': i, 'updated': u + r, 'deleted': d, 'unchanged': source_rows - i - u - r - held,
    'held_back': held + kept,
    'total': target_state.current + i - (0 if new_record else d),
    'versions': target_state.versions + i + u + r + (d if new_record else 0),
    'classes': {'I': i, 'U': u, 'R': r, 'D': d, 'H': held, 'L': kept},
  }) }}
{% endmacro %}

{#- `coalesce(sum(case when <action> = 'I' then 1 else 0 end), 0), ...` for I, U, R, D, H, L. -#}
{% macro _history_sums(action) %}
  {%- set parts = [] -%}
  {%- for a in ['I', 'U', 'R', 'D', 'H', 'L'] -%}
    {%- do parts.append("coalesce(sum(case when " ~ action ~ " = '" ~ a ~ "' then 1 else 0 end), 0)") -%}
  {%- endfor -%}
  {{ return(parts | join(', ')) }}
{% endmacro %}

{#- Refuse, from the counts and before anything is written: late rows with late_rows='fail'; a
    key of the SELECT whose current version lies outside incremental_predicates (a second current
    version); more invalidations than max_delete_fraction of the live current versions the
    merge considers. -#}
{% macro check_history_counts(plan, stats, target_state) %}
  {% set h = plan.history %}
  {% set c = stats.classes %}
  {% set key_names = '(' ~ plan.key_columns | join(', ') ~ ')' %}
  {% if h.late_rows == 'fail' and c.H > 0 %}
    {% set example = dbt_merge._history_changes_example(plan, 'H') %}
    {{ dbt_merge.raise_merge_error(c.H ~ " row(s) of the model's SELECT are late: not newer than their key's current "
        ~ "version in " ~ plan.target ~ " (" ~ ((h.updated_at ~ " before its " ~ h.cols.dbt_updated_at ~ ", or equal to it "
        ~ "with other values, or not after its " ~ h.cols.dbt_valid_from) if h.updated_at
        else ("the run's time not after its " ~ h.cols.dbt_valid_from)) ~ "), e.g. " ~ key_names ~ " = (" ~ example
        ~ "), and late_rows='fail'. Check the SELECT's " ~ (h.updated_at or "source") ~ ", or set late_rows='hold' to "
        ~ "keep such rows out of the history and count them held back. The target was not changed.") }}
  {% endif %}
  {% if h.late_rows == 'fail' and c.L > 0 %}
    {% set example = dbt_merge._history_changes_example(plan, 'L') %}
    {{ dbt_merge.raise_merge_error(c.L ~ " key(s) the model's SELECT lacks have a current version in " ~ plan.target
        ~ " that starts at or after the run's time (" ~ h.cols.dbt_valid_from ~ " in the future), e.g. " ~ key_names
        ~ " = (" ~ example ~ "): hard_deletes='" ~ h.hard_deletes ~ "' would close it before it starts, and "
        ~ "late_rows='fail'. Check the SELECT and the table's " ~ h.cols.dbt_valid_from ~ ", or set late_rows='hold' to "
        ~ "close such versions only once the run's time has passed their start (counted held back until then). "
        ~ "The target was not changed.") }}
  {% endif %}
  {#- a key whose only current version lies outside the predicates is classified new ('I'), or
      held back ('H') when a closed version of the key starts after the row (red team helper-89) -#}
  {% if plan.predicates and c.I + c.H > 0 %}
    {% set dst = 'DBT_INTERNAL_DEST' %}
    {% set outside = 'not coalesce((' ~ plan.predicates | map('string') | map('trim') | join(') and (') ~ '), false) and '
                     ~ dbt_merge.history_current(plan, dst) %}
    {% set row = dbt_merge.run_sql('select count(*), min(' ~ dbt_merge.history_key_text(plan, 'DBT_INTERNAL_SOURCE')
        ~ ') from ' ~ plan.changes ~ ' as DBT_INTERNAL_SOURCE where DBT_INTERNAL_SOURCE.'
        ~ dbt_merge.quote_identifier(plan.names.action) ~ " in ('I', 'H') and "
        ~ dbt_merge.exists_match(plan.target ~ ' as ' ~ dst, plan.key_columns, 'DBT_INTERNAL_SOURCE', outside,
                                 compare=plan.compare),
        'dbt_merge_check').rows[0] %}
    {% if row[0] | int > 0 %}
      {{ dbt_merge.raise_merge_error(row[0] | int ~ " row(s) of the SELECT have a key whose current version in "
          ~ plan.target ~ " is outside incremental_predicates, e.g. " ~ key_names ~ " = (" ~ row[1] ~ "): a new "
          ~ "version would give that key a second current version. Widen incremental_predicates to cover these rows, "
          ~ "or filter them out of the SELECT. The target was not changed.") }}
    {% endif %}
  {% endif %}
  {% set live, extra = target_state.live, 0 %}
  {% if c.D > 0 and c.D <= plan.max_delete_fraction * live and plan.max_delete_fraction < 1 %}
    {#- the base counted in rows: a key the run leaves alone may hold several current versions
        (check_history_target reads only the keys the run writes), so count the keys, only when
        the rows would let the deletions through (red team helper-89) -#}
    {% set keys = dbt_merge._history_live_keys(plan) %}
    {% set live, extra = keys, live - keys %}
  {% endif %}
  {% if c.D > 0 and c.D > plan.max_delete_fraction * live %}
    {{ dbt_merge.raise_merge_error("hard_deletes='" ~ h.hard_deletes ~ "' would close " ~ c.D ~ " of the " ~ live
        ~ (" current versions" if not extra else " keys with a current version") ~ " it considers ("
        ~ ((100.0 * c.D / live) | round(1)) ~ "%), more than "
        ~ "max_delete_fraction=" ~ plan.max_delete_fraction ~ " allows"
        ~ ((" (the table holds " ~ extra ~ " more current version(s) of keys this run leaves alone: the test "
            ~ "dbt_merge.current_unique lists them)") if extra else "")
        ~ (": the SELECT is empty" if stats.inserted + stats.updated + stats.unchanged + c.H == 0 else "")
        ~ ". If that is intended, set max_delete_fraction (1 allows any); otherwise check the model's SELECT and its "
        ~ "upstream models. The target was not changed.") }}
  {% endif %}
{% endmacro %}

{#- The keys (told apart byte for byte) with a current version the merge considers that is not a
    deletion record: the base of max_delete_fraction where a key may hold several. -#}
{% macro _history_live_keys(plan) %}
  {% set dst = 'DBT_INTERNAL_DEST' %}
  {% set keys = dbt_merge.compared_list(plan.compare, plan.key_columns, dst) %}
  {% set row = dbt_merge.run_sql('select count(*) from (select ' ~ keys ~ ' from ' ~ plan.target ~ ' as ' ~ dst
      ~ ' where ' ~ dbt_merge.history_live(plan, dst) ~ ' group by ' ~ keys ~ ') as grouped',
      'dbt_merge_check').rows[0] %}
  {{ return(row[0] | int) }}
{% endmacro %}

{#- One key (as text) of the changes rows with `action`. -#}
{% macro _history_changes_example(plan, action) %}
  {% set rows = dbt_merge.run_sql('select min(' ~ dbt_merge.history_key_text(plan, 'DBT_INTERNAL_SOURCE') ~ ') from '
      ~ plan.changes ~ ' as DBT_INTERNAL_SOURCE where DBT_INTERNAL_SOURCE.' ~ dbt_merge.quote_identifier(plan.names.action)
      ~ " = '" ~ action ~ "'", 'dbt_merge_check').rows %}
  {{ return(rows[0][0] if rows else '') }}
{% endmacro %}
