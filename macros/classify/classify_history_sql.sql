{#-
  strategy='history': the changes of a run, one row per key that changes or is held back (the
  source rows left as they are, and target rows left alone, are not listed: a daily snapshot
  of a dimension lists its few changed keys, not the whole table). One join of the SELECT with
  the target's current versions (those incremental_predicates consider); each row has the key,
  the action and `at`, the time of the change:
    'I' the key has no current version: its first version (a new key, or one that comes back
        after hard_deletes='invalidate' closed it), valid from `at`
    'U' the current version changed: it is closed at `at` and a new version opens at `at`
    'R' the current version is a deletion record (hard_deletes='new_record'), and the key is
        back: the record is closed and a new version opens at `at`
    'D' (hard_deletes) a live current version whose key the SELECT lacks: closed at `at` (the
        run's time), and with new_record a deletion record opens at `at`
    'H' a late row of the SELECT (held back, late_rows)
    'L' a deletion held back: the key's current version starts at or after the run's time (an
        updated_at in the future), so closing it now would leave a version valid for no time
  Every version the run opens starts strictly after the key's last version starts, and every
  version it closes ends strictly after it starts: no version is valid for no time, and
  dbt_scd_id (md5 of the key and the start) never repeats. A row that cannot have that is late.
  A version opens at the SELECT row's updated_at, or the run's time without updated_at (dbt's
  timestamp and check strategies). A key coming back opens at its updated_at when that is after
  the end of its last version, else at the run's time (or that end, if later): a history with no
  overlap, where dbt snapshots write a version valid before the key was deleted.
  A matched row is changed when its start (its updated_at, or the run's time) is after the
  current version's own time (its dbt_updated_at: the updated_at it was written with) and, with
  compared columns (merge_check_columns, check_cols, or every column without updated_at), one of
  them differs (NULL-safe); with no column to compare and no updated_at nothing can change.
  A changed row is late when its start is not after the current version's dbt_valid_from (a
  version that came back later than its updated_at, a clock set back), and so is a row whose start
  is before the current version's own time, or equal to it while a column differs (same_time:
  the compared columns, or every shared one with updated_at alone): dbt snapshots write no
  version for any of them either.
  `target_state`: history_target_totals' result (closed_versions: none, and no key can come back).
-#}
{% macro classify_history_sql(plan, target_state) %}
  {%- set h = plan.history -%}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set q = dbt_merge.quote_identifier -%}
  {%- set first_key = q(plan.key_columns[0]) -%}
  {%- set now = dbt_merge.history_time(plan, h.run_time) -%}
  {%- set start = dbt_merge.history_time(plan, src ~ '.' ~ q(h.updated_at)) if h.updated_at else now -%}
  {%- set current_from = dst ~ '.' ~ q(h.cols.dbt_valid_from) -%}
  {#- the current version's own time: its dbt_updated_at (its updated_at, or the run's time of the
      run that wrote it; dbt_valid_from when there is none) -#}
  {%- set current_time = 'coalesce(' ~ dbt_merge.history_time(plan, dst ~ '.' ~ q(h.cols.dbt_updated_at)) ~ ', '
                         ~ current_from ~ ')' -%}
  {%- set deletes = plan.actions.target_only == 'delete' -%}
  {%- set differ = dbt_merge._history_differ(plan, h.compare) -%}
  {%- set differ_now = dbt_merge._history_differ(plan, h.same_time) -%}
  {%- if not h.updated_at and not h.compare -%}
    {#- nothing to compare (a SELECT of the key alone, or columns the table lacks): unchanged -#}
    {%- set newer, late = 'false', 'false' -%}
  {%- else -%}
    {%- set newer = start ~ ' > ' ~ current_time ~ (' and ' ~ differ if h.compare else '') -%}
    {%- set late = start ~ ' < ' ~ current_time ~ ' or (' ~ start ~ ' = ' ~ current_time ~ ' and ' ~ differ_now
                   ~ ') or (' ~ newer ~ ' and ' ~ start ~ ' <= ' ~ current_from ~ ')' -%}
  {%- endif -%}
  {%- set last = 'dbt_merge_changes' -%}
  {%- set last_to = last ~ '.' ~ q(plan.names.to) -%}
  {%- set last_from = last ~ '.' ~ q(plan.names['from']) -%}
  {%- set comes_back = target_state.closed_versions > 0 -%}
  {%- set first_at = ('case when ' ~ last_to ~ ' is null or ' ~ start ~ ' > ' ~ last_to ~ ' then ' ~ start
                      ~ ' else greatest(' ~ now ~ ', ' ~ last_to ~ ') end') if comes_back else start -%}
  {#- a key back after a deletion record opens at its updated_at if after the record's start, else
      at the run's time -#}
  {%- set back_at = 'case when ' ~ start ~ ' > ' ~ current_from ~ ' then ' ~ start ~ ' else ' ~ now ~ ' end' -%}
  select {{ dbt_merge.column_list(plan.key_columns) }}, {{ q(plan.names.action) }}, {{ q(plan.names.at) }}
  from (
    select
      {%- for key in plan.key_columns %}
      coalesce({{ src }}.{{ q(key) }}, {{ dst }}.{{ q(key) }}) as {{ q(key) }},
      {%- endfor %}
      case
        when {{ dst }}.{{ first_key }} is null then
          {{- (" case when " ~ last_from ~ " is not null and " ~ first_at ~ " <= " ~ last_from ~ " then 'H' else 'I' end")
              if comes_back else " 'I'" }}
        when {{ src }}.{{ first_key }} is null then
          {{- (" case when " ~ dbt_merge.history_deleted(plan, dst) ~ " then 'X' when " ~ now ~ " > " ~ current_from
               ~ " then 'D' else 'L' end") if deletes else " 'X'" }}
        when {{ dbt_merge.history_deleted(plan, dst) }} then
          case when {{ back_at }} > {{ current_from }} then 'R' else 'H' end
        when {{ late }} then 'H'
        when {{ newer }} then 'U'
        else 'N'
      end as {{ q(plan.names.action) }},
      case
        when {{ dst }}.{{ first_key }} is null then {{ first_at }}
        when {{ src }}.{{ first_key }} is null then {{ now }}
        when {{ dbt_merge.history_deleted(plan, dst) }} then {{ back_at }}
        else {{ start }}
      end as {{ q(plan.names.at) }}
    from {{ plan.deduped or plan.stage }} as {{ src }}
    {{ 'full' if deletes else 'left' }} outer join (
      select * from {{ plan.target }} as {{ dst }}
      where {{ dbt_merge.target_rows_condition(plan, false) }} and {{ dbt_merge.history_current(plan, dst) }}
    ) as {{ dst }}
      on {{ dbt_merge.key_match(plan.key_columns, src, dst, plan.compare) }}
    {%- if comes_back %}
    {#- the start and end of the last version of each key without a current version -#}
    left outer join (
      select
        {%- for key in plan.key_columns %} {{ dbt_merge.compared_value(plan.compare, key, dst ~ '.' ~ q(key)) }} as {{ q(key) }},{% endfor %}
        max({{ dst }}.{{ q(h.cols.dbt_valid_to) }}) as {{ q(plan.names.to) }},
        max({{ dst }}.{{ q(h.cols.dbt_valid_from) }}) as {{ q(plan.names['from']) }}
      from {{ plan.target }} as {{ dst }}
      where not ({{ dbt_merge.history_current(plan, dst) }})
      group by {{ dbt_merge.compared_list(plan.compare, plan.key_columns, dst) }}
    ) as {{ last }}
      {# its keys are compared values already (a struct's sort key): compared once, on the SELECT's
         side only (red team helper-90: a struct key compared twice never matched, and a key
         back after hard_deletes opened before its last version ended, an overlap) #}
      on {% for key in plan.key_columns -%}
        {{ 'and ' if not loop.first }}{{ dbt_merge.compared_value(plan.compare, key, src ~ '.' ~ q(key)) }} = {{ last }}.{{ q(key) }}
      {% endfor %}
    {%- endif %}
  ) as dbt_merge_numbered
  where {{ q(plan.names.action) }} in ('I', 'U', 'R', 'D', 'H', 'L')
{% endmacro %}

{#- SQL: one of `columns` (the table's, shared with the SELECT) differs between the SELECT's row
    and the current version (NULL-safe, byte for byte); false for none. -#}
{% macro _history_differ(plan, columns) %}
  {%- set q = dbt_merge.quote_identifier -%}
  {%- set parts = [] -%}
  {%- for col in columns -%}
    {%- set source_col = dbt_merge.find_column(col, plan.source_names) -%}
    {%- do parts.append(dbt_merge.changed_condition(
          dbt_merge.compared_value(plan.compare, source_col, 'DBT_INTERNAL_SOURCE.' ~ q(source_col)),
          dbt_merge.compared_value(plan.compare, source_col, dbt_merge.dest_value(plan, col)))) -%}
  {%- endfor -%}
  {{ return('(' ~ parts | join(' or ') ~ ')' if parts else 'false') }}
{% endmacro %}
