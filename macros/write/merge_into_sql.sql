{#- MERGE INTO the target from the classified changes (ANSI form, as Spark, Iceberg and Delta take it). -#}
{% macro merge_into_sql(plan) %}
  {{ return(adapter.dispatch('merge_into_sql', 'dbt_merge')(plan)) }}
{% endmacro %}

{% macro default__merge_into_sql(plan) %}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set action = dbt_merge.quote_identifier(plan.names.action) -%}
  {%- set guard = dbt_merge.snapshot_guard_sql(plan) %}
  merge into {{ plan.target }} as {{ dst }}
  using (
    select * from {{ plan.changes }} where {{ action }} in ('I', 'U', 'D', 'C')
    {%- if guard %} and {{ guard }}{% endif %}
  ) as {{ src }}
  on {{ dbt_merge.key_match(plan.key_columns, src, dst) }}
  {%- for predicate in plan.predicates %} and ({{ predicate }}){% endfor %}
  when matched and {{ src }}.{{ action }} in ('D', 'C') then {{ dbt_merge._merge_delete_action(plan) }}
  {%- if plan.update_columns %}
  when matched and {{ src }}.{{ action }} = 'U' then update set
    {%- for col in plan.update_columns %}
    {{ dst }}.{{ dbt_merge.quote_identifier(col) }} = {{ src }}.{{ dbt_merge.quote_identifier(col) }}{{ ',' if not loop.last }}
    {%- endfor %}
  {%- endif %}
  {%- if plan.actions.source_only == 'insert' %}
  when not matched and {{ src }}.{{ action }} = 'I' then insert ({{ dbt_merge.column_list(plan.target_names) }})
    values ({{ dbt_merge.column_list(plan.target_names, src) }})
  {%- endif %}
{% endmacro %}

{#- MERGE INTO the target straight from the staged source, for plans that write source rows as they
    are (plan.writes_source_rows), with the narrow changes (classify_matched_keys_sql) counted.
    Clauses with nothing to do are left out. The MERGE's source is the staged SELECT, and the
    update clause carries the change (and merge_update_condition) test itself: matched rows left
    as they are reach the MERGE but are not written. Filtering them out of the source first (a
    second join of the SELECT with the target) was measured slower on Iceberg tables of both kinds
    (issue 22, idle machine, local[2], a 2M-row snapshot with 1% changed, paired runs of
    benchmarks.compare: copy-on-write upsert 17.4 s filtered, 14.1 s not; merge-on-read 15.8 s,
    14.5 s; a merge-on-read MERGE ran 5 Spark jobs instead of 8 at 200k rows): a
    copy-on-write MERGE evaluates its source twice (once to find the files to rewrite), and
    changes spread over the keys touch every file anyway. What filtering would save is a
    copy-on-write table whose changed rows sit in few files; see docs/spark.md.
    Target rows with a NULL key or outside incremental_predicates are never deleted.
    Every MERGE has a WHEN MATCHED clause: Spark plans one without as an append, which Iceberg
    commits without checking for other writers' commits (a key committed meanwhile would be in the
    table twice). When the plan only inserts, the source is then the rows counted new (when some
    matched rows are left as they are), and a match fails the statement: such a key was committed
    by another writer after the counts. The source rows pass snapshot_guard_sql: the table must
    still be the snapshot counted. -#}
{% macro merge_source_rows_sql(plan, counts, rewrite_every_file=false) %}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set full = plan.actions.target_only == 'delete' -%}
  {%- set columns = dbt_merge.written_columns(plan) -%}
  {%- set kept = counts.unchanged + (counts.held_back or 0) -%}
  {%- set inserts_only = counts.updated + counts.condition_deletes + counts.unmatched == 0 -%}
  {%- set filtered = kept > 0 and inserts_only -%}
  {%- set del = dbt_merge.delete_flag(plan) if plan.delete_condition else none -%}
  {%- set rows = dbt_merge.source_rows_sql(plan, 'changed' if filtered else none,
                                           keep_deleted=plan.delete_condition or plan.update_condition) -%}
  {%- set guard = dbt_merge.snapshot_guard_sql(plan) -%}
  merge into {{ plan.target }} as {{ dst }}
  using ({{ 'select * from (' ~ rows ~ ') as ' ~ src ~ ' where ' ~ guard if guard else rows }}) as {{ src }}
  on {{ dbt_merge.key_match(plan.key_columns, src, dst) }}
  {%- for predicate in plan.predicates %} and ({{ predicate }}){% endfor %}
  {%- if inserts_only %}
  {%- set q = dbt_merge.quote_identifier(columns[0]) %}
  when matched then update set {{ dst }}.{{ q }} = coalesce(raise_error({{ dbt_merge.sql_string(
      dbt_merge._concurrent_insert_message(plan)) }}), {{ dst }}.{{ q }})
  {%- endif %}
  {%- if counts.condition_deletes > 0 %}
  when matched and {{ del }} {%- if plan.soft_delete %} and {{ dbt_merge.live(plan) }}{% endif %} then {{ dbt_merge._merge_delete_action(plan) }}
  {%- endif %}
  {%- if counts.updated > 0 %}
  {%- set tests = [] %}
  {%- if del %}{% do tests.append('not ' ~ del) %}{% endif %}
  {%- if not filtered and kept > 0 %}{% do tests.append(dbt_merge.row_changed_condition(plan)) %}{% endif %}
  {%- if not filtered and plan.update_condition and counts.held_back > 0 %}{% do tests.append(dbt_merge.update_allowed(plan)) %}{% endif %}
  when matched {%- for t in tests %} and {{ t }}{% endfor %} then update set
    {%- for col in plan.update_columns %}
    {{ dst }}.{{ dbt_merge.quote_identifier(col) }} = {{ src }}.{{ dbt_merge.quote_identifier(col) }}{{ ',' if not loop.last }}
    {%- endfor %}
  {%- endif %}
  {%- if counts.inserted > 0 %}
  when not matched {%- if del %} and not {{ del }}{% endif %} then insert ({{ dbt_merge.column_list(columns) }})
    values ({{ dbt_merge.column_list(columns, src) }})
  {%- endif %}
  {%- if counts.unmatched > 0 %}
  when not matched by source and {{ dbt_merge.target_rows_condition(plan, false) }}
    {%- if plan.soft_delete %} and {{ dbt_merge.live(plan) }}{% endif %} then {{ dbt_merge._merge_delete_action(plan) }}
  {%- elif rewrite_every_file and not inserts_only %}
  {#- no runtime file filter (_rewrites_every_file); the clause applies to no row -#}
  when not matched by source and false then delete
  {%- endif %}
{% endmacro %}

{#- What a MERGE does to a target row it removes: delete it, or soft-delete it. -#}
{% macro _merge_delete_action(plan) %}
  {{ return('update set ' ~ dbt_merge.soft_delete_assignments(plan, true) if plan.soft_delete else 'delete') }}
{% endmacro %}

{#- What a MERGE that only inserts says when a key counted new is in the table as it writes. -#}
{% macro _concurrent_insert_message(plan) %}
  {{ return(dbt_merge.merge_error_prefix() ~ "another writer committed to " ~ plan.target
      ~ " a key that this run counted as new, after it counted its changes, so nothing was written "
      ~ "(the key would have been in the table twice). Running the model again is safe: it counts "
      ~ "the table as it is then.") }}
{% endmacro %}
