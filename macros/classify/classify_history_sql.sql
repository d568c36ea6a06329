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
    'H' a late row: older than its key's current version (held back, late_rows)
  A version opens at the SELECT row's updated_at, or the run's time without updated_at (dbt's
  timestamp and check strategies). A key coming back opens at its updated_at only when that is
  after the end of its last version (else the run's time, never before that end): a history
  with no overlap, where dbt snapshots write a version valid before the key was deleted. A
  deletion closes at the run's time, or at the version's start if that is later (an updated_at
  in the future), so that no version ends before it starts.
  A row is late when its start (its updated_at, or the run's time) is before the current
  version's own (its dbt_updated_at: the updated_at it was written with), or equal to it while
  the compared columns differ. It is changed when its start is after the current version's and,
  with compared columns (merge_check_columns, check_cols, or every column without updated_at),
  one of them differs (NULL-safe). dbt snapshots compare with dbt_valid_from, which is the same
  time except for a version that opened later than its updated_at (a key that came back): this
  keeps such a version from making every later row of the key late. A changed version closes
  at the new one's start, or at its own start if that is later (never a version that ends
  before it starts).
  `target_state`: check_history_target's result (closed: whether a key can come back closed).
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
  {%- set differ = [] -%}
  {%- for col in h.compare -%}
    {%- set source_col = dbt_merge._find_column(col, plan.source_names) -%}
    {%- do differ.append(dbt_merge.changed_condition(
          dbt_merge.compared_value(plan.compare, source_col, src ~ '.' ~ q(source_col)),
          dbt_merge.compared_value(plan.compare, source_col, dbt_merge._dest_value(plan, col)))) -%}
  {%- endfor -%}
  {%- if differ -%}
    {%- set differ = '(' ~ differ | join(' or ') ~ ')' -%}
    {%- set late = start ~ ' < ' ~ current_time ~ ' or (' ~ start ~ ' = ' ~ current_time ~ ' and ' ~ differ ~ ')' -%}
    {%- set changed = start ~ ' > ' ~ current_time ~ ' and ' ~ differ -%}
  {%- else -%}
    {%- set late = start ~ ' < ' ~ current_time -%}
    {%- set changed = start ~ ' > ' ~ current_time -%}
  {%- endif -%}
  {%- set last = 'dbt_merge_changes' -%}
  {%- set last_to = last ~ '.' ~ q(plan.names.to) -%}
  {%- set comes_back = target_state.closed > 0 -%}
  {%- set first_at = ('case when ' ~ last_to ~ ' is null or ' ~ start ~ ' > ' ~ last_to ~ ' then ' ~ start
                      ~ ' else greatest(' ~ now ~ ', ' ~ last_to ~ ') end') if comes_back else start -%}
  select {{ dbt_merge.column_list(plan.key_columns) }}, {{ q(plan.names.action) }}, {{ q(plan.names.at) }}
  from (
    select
      {%- for key in plan.key_columns %}
      coalesce({{ src }}.{{ q(key) }}, {{ dst }}.{{ q(key) }}) as {{ q(key) }},
      {%- endfor %}
      case
        when {{ dst }}.{{ first_key }} is null then 'I'
        when {{ src }}.{{ first_key }} is null then
          {{- " case when not " ~ dbt_merge.history_deleted(plan, dst) ~ " then 'D' else 'X' end" if deletes else " 'X'" }}
        when {{ dbt_merge.history_deleted(plan, dst) }} then 'R'
        when {{ late }} then 'H'
        when {{ changed }} then 'U'
        else 'N'
      end as {{ q(plan.names.action) }},
      case
        when {{ dst }}.{{ first_key }} is null then {{ first_at }}
        when {{ src }}.{{ first_key }} is null then greatest({{ now }}, {{ current_from }})
        when {{ dbt_merge.history_deleted(plan, dst) }} then
          case when {{ start }} > {{ current_from }} then {{ start }} else greatest({{ now }}, {{ current_from }}) end
        else greatest({{ start }}, {{ current_from }})
      end as {{ q(plan.names.at) }}
    from {{ plan.deduped or plan.stage }} as {{ src }}
    {{ 'full' if deletes else 'left' }} outer join (
      select * from {{ plan.target }} as {{ dst }}
      where {{ dbt_merge._target_rows_condition(plan, false) }} and {{ dbt_merge.history_current(plan, dst) }}
    ) as {{ dst }}
      on {{ dbt_merge.key_match(plan.key_columns, src, dst, plan.compare) }}
    {%- if comes_back %}
    {#- the end of the last version of each key without a current version -#}
    left outer join (
      select
        {%- for key in plan.key_columns %} {{ dbt_merge.compared_value(plan.compare, key, dst ~ '.' ~ q(key)) }} as {{ q(key) }},{% endfor %}
        max({{ dst }}.{{ q(h.cols.dbt_valid_to) }}) as {{ q(plan.names.to) }}
      from {{ plan.target }} as {{ dst }}
      where not ({{ dbt_merge.history_current(plan, dst) }})
      group by {{ dbt_merge.compared_list(plan.compare, plan.key_columns, dst) }}
    ) as {{ last }}
      on {{ dbt_merge.key_match(plan.key_columns, src, last, plan.compare) }}
    {%- endif %}
  ) as dbt_merge_numbered
  where {{ q(plan.names.action) }} in ('I', 'U', 'R', 'D', 'H')
{% endmacro %}
