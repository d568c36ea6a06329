{#-
  strategy='history': the checks of its own, before anything is written (the SELECT's keys were
  checked by check_source_rows: present, not NULL, unique or deduplicated by dedup_order_by).
-#}

{#- The SELECT's updated_at is never NULL: a version without a start cannot be placed in its
    key's history (dbt snapshots write it with a NULL dbt_valid_from). -#}
{% macro check_history_source(plan) %}
  {% if not plan.history.updated_at %}
    {{ return(none) }}
  {% endif %}
  {% set src = 'DBT_INTERNAL_SOURCE' %}
  {% set row = dbt_merge.run_sql('select count(*), min(' ~ dbt_merge.history_key_text(plan, src) ~ ') from '
      ~ (plan.deduped or plan.stage) ~ ' as ' ~ src ~ ' where ' ~ src ~ '.'
      ~ dbt_merge.quote_identifier(plan.history.updated_at) ~ ' is null', 'dbt_merge_check').rows[0] %}
  {% if row[0] | int > 0 %}
    {{ dbt_merge.raise_merge_error("updated_at column '" ~ plan.history.updated_at ~ "' is NULL in " ~ row[0] | int
        ~ " row(s) of the model's SELECT, e.g. (" ~ plan.key_columns | join(', ') ~ ") = (" ~ row[1] ~ "): a version "
        ~ "is valid from its updated_at, so it must have one. Filter those rows out or coalesce the column in the "
        ~ "SELECT. The target was not changed.") }}
  {% endif %}
{% endmacro %}

{#- The key of the row aliased `alias`, as text ('1, a'), for a message. -#}
{% macro history_key_text(plan, alias) %}
  {%- set parts = [] -%}
  {%- for key in plan.key_columns -%}
    {%- do parts.append('cast(' ~ alias ~ '.' ~ dbt_merge.quote_identifier(key) ~ ' as string)') -%}
  {%- endfor -%}
  {{ return("concat_ws(', ', " ~ parts | join(', ') ~ ")") }}
{% endmacro %}

{#-
  The table's totals, in one aggregate over its rows (no window, no sort), before the changes
  are classified: versions (the table's rows), current (its current versions), live (current
  versions the merge considers that are not deletion records: the base of
  max_delete_fraction), closed_versions (its closed versions: with none, no key can come back
  after hard_deletes, and the classify skips the search for a key's last closed version),
  closed_late (versions of a key, not NULL, closed more than two days after the run's time:
  check_history_target reads every such key, whether the run writes it or not).
-#}
{% macro history_target_totals(plan) %}
  {% set dst = 'DBT_INTERNAL_DEST' %}
  {% set current = dbt_merge.history_current(plan, dst) %}
  {% set row = dbt_merge.run_sql(
      "select count(*), coalesce(sum(case when " ~ current ~ " then 1 else 0 end), 0),
         coalesce(sum(case when " ~ dbt_merge.history_live(plan, dst) ~ " then 1 else 0 end), 0),
         coalesce(sum(case when " ~ dbt_merge._history_closed_late(plan, dst) ~ " then 1 else 0 end), 0)
       from " ~ plan.target ~ " as " ~ dst, 'dbt_merge_check').rows[0] %}
  {{ return({'versions': row[0] | int, 'current': row[1] | int, 'live': row[2] | int,
             'closed_versions': row[0] | int - row[1] | int, 'closed_late': row[3] | int}) }}
{% endmacro %}

{#- SQL: the version aliased `alias`, of a key (not NULL), is closed more than two days after the
    run's time (the last version of its key, or one a version starting in the future follows). -#}
{% macro _history_closed_late(plan, alias) %}
  {%- set h = plan.history -%}
  {%- set q = dbt_merge.quote_identifier -%}
  {%- set vt = alias ~ '.' ~ q(h.cols.dbt_valid_to) -%}
  {%- set vt_type = (h.meta | selectattr('role', 'equalto', 'dbt_valid_to') | first).column.dtype -%}
  {%- set parts = [] -%}
  {%- for key in plan.key_columns -%}
    {%- do parts.append(alias ~ '.' ~ q(key) ~ ' is not null') -%}
  {%- endfor -%}
  {{ return('(' ~ parts | join(' and ') ~ ' and not (' ~ dbt_merge.history_current(plan, alias) ~ ') and ' ~ vt
            ~ ' > cast(' ~ h.run_time ~ ' + interval 2 day as ' ~ vt_type ~ '))') }}
{% endmacro %}

{#-
  The history of every key the run writes is sound (the keys of the changes: classify_history_sql
  lists each key it opens, closes or holds back), read in one pass over those keys' versions (a
  window by key, in the order of dbt_valid_from): no key has more than one current version, no
  version has no dbt_valid_from or ends before it starts, and none overlaps the next version of
  its key (a current version is followed by none). Refused naming a key, never repaired: two
  current versions are what two colliding snapshot runs leave (dbt-core #4661, #11747), and a
  merge on top of them would close or extend the wrong one. Every version of those keys is
  read, whatever incremental_predicates say: a key's versions may straddle them. A key the run
  leaves alone is not read: a daily snapshot of a dimension reads the versions of its few
  changed keys, not the whole table (the test dbt_merge.current_unique checks the whole table).
  A key the run would write has a row in the changes ('I', 'U', 'R', 'D'), so it is read: one with
  two current versions is refused whenever the SELECT's row differs from either (or its key is
  closed by hard_deletes); when it equals both, nothing is written for the key.
  A key's last version closed more than two days after the run's time (a change of the session's
  time zone moves a wall-clock time by up to 26 hours) is refused too, whether the run writes
  the key or not: no run closes a version in the future, so the table marks its current versions
  with a dbt_valid_to of its own (a snapshot's or model's dbt_valid_to_current) that the model
  does not set, and a run of new keys only would write them with another marker (red team
  helper-89). So the versions of every key with a version closed that late (history_target_totals
  counts them: none, in a table without a marker) are read as well. The message names the value
  as the marker only when every such key shares it and it is more than a year ahead (9999-12-31,
  2999-...): a time a few keys share near the run's may be a real closing time, and setting it as
  the marker would rewrite them (red team history2).
-#}
{% macro check_history_target(plan, target_state) %}
  {% set h = plan.history %}
  {% set n = plan.names %}
  {% set dst = 'DBT_INTERNAL_DEST' %}
  {% set q = dbt_merge.quote_identifier %}
  {% set vf, vt = q(h.cols.dbt_valid_from), q(h.cols.dbt_valid_to) %}
  {% set cur, nxt, bad, count = q(n.current), q(n.next), q(n.bad), q(n.rows) %}
  {% set has_key = [] %}
  {% for key in plan.key_columns %}
    {% do has_key.append(dst ~ '.' ~ q(key) ~ ' is not null') %}
  {% endfor %}
  {% set keys = dbt_merge.column_list(plan.key_columns) %}
  {#- versions of one key, told apart byte for byte (compared_value) -#}
  {% set groups = dbt_merge.compared_list(plan.compare, plan.key_columns) %}
  {% set vt_type = (h.meta | selectattr('role', 'equalto', 'dbt_valid_to') | first).column.dtype %}
  {% set future = q(n.to) %}
  {% set key_text = dbt_merge.history_key_text(plan, dst) %}
  {% set rows = dbt_merge.run_sql(
      "select
         coalesce(sum(case when " ~ count ~ " > 1 and " ~ cur ~ " = 1 then 1 else 0 end), 0),
         min(case when " ~ count ~ " > 1 then " ~ key_text ~ " end),
         coalesce(sum(case when " ~ count ~ " <= 1 and " ~ bad ~ " = 1 then 1 else 0 end), 0),
         min(case when " ~ count ~ " <= 1 and " ~ bad ~ " = 1 then " ~ key_text ~ " end),
         coalesce(sum(" ~ future ~ "), 0),
         min(case when " ~ future ~ " = 1 then " ~ key_text ~ " end),
         min(case when " ~ future ~ " = 1 then " ~ vt ~ " end), max(case when " ~ future ~ " = 1 then " ~ vt ~ " end),
         cast(min(case when " ~ future ~ " = 1 then " ~ vt ~ " end) as string)
       from (
         select " ~ keys ~ ", " ~ cur ~ ", " ~ count ~ ", " ~ nxt ~ ", " ~ vt ~ ",
           case when " ~ nxt ~ " is null and " ~ dbt_merge._history_closed_late(plan, dst)
             ~ " then 1 else 0 end as " ~ future ~ ",
           case when " ~ has_key | join(' and ') ~ " and (" ~ vf ~ " is null
                  or (" ~ cur ~ " = 0 and " ~ vt ~ " < " ~ vf ~ ")
                  or (" ~ nxt ~ " is not null and (" ~ cur ~ " = 1 or " ~ vt ~ " > " ~ nxt ~ ")))
                then 1 else 0 end as " ~ bad ~ "
         from (
           select " ~ keys ~ ", " ~ vf ~ ", " ~ vt ~ ", " ~ cur ~ ",
             lead(" ~ vf ~ ") over (partition by " ~ groups ~ " order by " ~ vf ~ " asc nulls first, " ~ vt ~ " asc nulls last) as " ~ nxt ~ ",
             sum(case when " ~ has_key | join(' and ') ~ " then " ~ cur ~ " else 0 end) over (partition by " ~ groups ~ ") as " ~ count ~ "
           from (
             select " ~ dbt_merge.column_list(plan.key_columns, dst) ~ ", " ~ dst ~ "." ~ vf ~ ", " ~ dst ~ "." ~ vt ~ ",
               case when " ~ dbt_merge.history_current(plan, dst) ~ " then 1 else 0 end as " ~ cur ~ "
             from " ~ plan.target ~ " as " ~ dst ~ "
             where " ~ dbt_merge.exists_match(plan.changes, plan.key_columns, dst, compare=plan.compare)
               ~ ((" or " ~ dbt_merge.exists_match(plan.target ~ ' as DBT_INTERNAL_SOURCE', plan.key_columns, dst,
                     dbt_merge._history_closed_late(plan, 'DBT_INTERNAL_SOURCE'), compare=plan.compare))
                  if target_state.closed_late > 0 else "") ~ "
           ) as " ~ dst ~ "
         ) as " ~ dst ~ "
       ) as " ~ dst, 'dbt_merge_check').rows %}
  {% set row = rows[0] %}
  {% set key_names = '(' ~ plan.key_columns | join(', ') ~ ')' %}
  {% if row[0] | int > 0 %}
    {{ dbt_merge.raise_merge_error("the history table " ~ plan.target ~ " holds more than one current version (" ~ h.cols.dbt_valid_to
        ~ (" NULL" if not h.valid_to_current else " NULL or dbt_valid_to_current") ~ ") of some keys (" ~ row[0] | int
        ~ " rows), e.g. " ~ key_names ~ " = (" ~ row[1] ~ "): the merge cannot tell which version to close. Close the "
        ~ "extra versions (set their " ~ h.cols.dbt_valid_to ~ ") or delete them; the test dbt_merge.current_unique "
        ~ "lists them. The target was not changed.") }}
  {% endif %}
  {% if row[2] | int > 0 %}
    {{ dbt_merge.raise_merge_error("the history table " ~ plan.target ~ " has " ~ row[2] | int ~ " version(s) whose validity "
        ~ "(" ~ h.cols.dbt_valid_from ~ " to " ~ h.cols.dbt_valid_to ~ ") overlaps the next version of the key, ends before it "
        ~ "starts, or has no start, e.g. " ~ key_names ~ " = (" ~ row[3] ~ "): a new version would extend a wrong history. "
        ~ "Repair those versions; the test dbt_merge.current_unique lists them. The target was not changed.") }}
  {% endif %}
  {% if row[4] | int > 0 %}
    {% set fix = "dbt_valid_to_current=\"cast('" ~ row[8] ~ "' as " ~ vt_type | lower ~ ")\"" %}
    {% set year = (row[8] | string)[:4] %}
    {% if row[6] == row[7] and modules.re.match('^[0-9]{4}$', year) and year | int > modules.datetime.datetime.utcnow().year + 1 %}
      {{ dbt_merge.raise_merge_error("the history table " ~ plan.target ~ " has " ~ row[4] | int ~ " key(s) whose last "
          ~ "version ends at " ~ row[8] ~ ", after the run's time, e.g. " ~ key_names ~ " = (" ~ row[5] ~ "): the table "
          ~ "marks its current versions with " ~ h.cols.dbt_valid_to ~ " = " ~ row[8] ~ " (dbt_valid_to_current), "
          ~ ("which is not set here" if not h.valid_to_current else "but dbt_valid_to_current is set to "
             ~ h.valid_to_current) ~ ", so every such key would be taken for a deleted one. Set " ~ fix ~ ", as the "
          ~ "snapshot or merge that wrote the table had it. The target was not changed.") }}
    {% endif %}
    {{ dbt_merge.raise_merge_error("the history table " ~ plan.target ~ " has " ~ row[4] | int ~ " key(s) whose last "
        ~ "version is closed after the run's time (" ~ h.cols.dbt_valid_to ~ " from " ~ row[8] ~ " on), e.g. " ~ key_names
        ~ " = (" ~ row[5] ~ "): no run closes a version in the future, so the merge cannot tell which versions are "
        ~ "current. " ~ (("If the table marks current versions with one " ~ h.cols.dbt_valid_to ~ ", set "
        ~ "dbt_valid_to_current to it (e.g. " ~ fix ~ ") and repair the versions closed at other times; else repair "
        ~ "those versions.") if year is not none and modules.re.match('^[0-9]{4}$', year) and year | int > modules.datetime.datetime.utcnow().year + 1
        else "Repair those versions (a closing time this near is no marker of current versions).") ~ " The target "
        ~ "was not changed.") }}
  {% endif %}
{% endmacro %}
