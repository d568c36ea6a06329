{#-
  Refuse, from the counts (count_changes) and before anything is written, a merge that would be
  wrong or that the user did not mean:
  - the target already holds a key of the SELECT more than once: which row to update is
    ambiguous, and the counts would not describe the table;
  - a SELECT row whose key exists in the target only outside incremental_predicates would be
    inserted as a second row of that key, or, when delete_condition is true for it, would
    delete nothing (unless on_key_outside_predicates='insert');
  - full_merge would delete more than max_delete_fraction of the target rows it considers
    (an empty SELECT, a filter left in the model, a broken upstream).
-#}
{% macro check_merge_counts(plan, counts) %}
  {% set matched_rows = counts.matched_rows %}
  {% if matched_rows > counts.matched_keys %}
    {% set example = dbt_merge._duplicate_target_key_example(plan) %}
    {{ dbt_merge.raise_merge_error("the target " ~ plan.target ~ " already holds " ~ (matched_rows - counts.matched_keys)
        ~ " extra row(s) for keys of the SELECT, e.g. (" ~ plan.key_columns | join(', ') ~ ") = (" ~ example ~ "): "
        ~ "a key must identify one target row. Remove the duplicate rows from the target (or rebuild it with "
        ~ "--full-refresh). The target was not changed.") }}
  {% endif %}

  {#- delete_condition rows too: one whose key the target holds only outside the predicates
      would silently delete nothing (found by the generated condition cases) -#}
  {% if plan.predicates and plan.actions.source_only == 'insert' and plan.key_outside_predicates == 'fail'
        and (counts.inserted > 0 or plan.delete_condition) %}
    {% set row = dbt_merge.run_sql(dbt_merge._keys_outside_predicates_sql(plan), 'dbt_merge_check').rows[0] %}
    {% if row[0] | int > 0 %}
      {{ dbt_merge.raise_merge_error(row[0] | int ~ " row(s) of the SELECT have a key that the target holds only "
          ~ "outside incremental_predicates, e.g. (" ~ plan.key_columns | join(', ') ~ ") = (" ~ row[1] ~ "): "
          ~ "inserting them would give the table that key twice"
          ~ (" (and a row for which delete_condition is true could not delete it)" if plan.delete_condition else "")
          ~ ". Widen incremental_predicates to cover these "
          ~ "rows, filter them out of the SELECT, or set on_key_outside_predicates='insert' to insert them "
          ~ "anyway (dbt's behaviour). The target was not changed.") }}
    {% endif %}
  {% endif %}

  {% if plan.actions.target_only == 'delete' and counts.deleted > 0
        and counts.deleted > plan.max_delete_fraction * counts.considered %}
    {% set source_rows = counts.inserted + counts.matched_rows %}
    {{ dbt_merge.raise_merge_error("full_merge would delete " ~ counts.deleted ~ " of the " ~ counts.considered
        ~ " target rows it considers (" ~ ((100.0 * counts.deleted / counts.considered) | round(1)) ~ "%), more than "
        ~ "max_delete_fraction=" ~ plan.max_delete_fraction ~ " allows"
        ~ (": the SELECT is empty" if source_rows == 0 else " (the SELECT has " ~ source_rows ~ " rows)")
        ~ ". If that is intended, set max_delete_fraction (1 allows any delete); otherwise check the model's "
        ~ "SELECT and its upstream models. The target was not changed.") }}
  {% endif %}
{% endmacro %}

{#- One key (as text) that more than one considered target row holds, among the SELECT's keys. -#}
{% macro _duplicate_target_key_example(plan) %}
  {% set parts = [] %}
  {% for key in plan.key_columns %}
    {% do parts.append('cast(DBT_INTERNAL_DEST.' ~ dbt_merge.quote_identifier(key) ~ ' as string)') %}
  {% endfor %}
  {% set rows = dbt_merge.run_sql('select min(dbt_merge_key) from (select min(concat_ws(\', \', ' ~ parts | join(', ')
      ~ ')) as dbt_merge_key from ' ~ plan.target ~ ' as DBT_INTERNAL_DEST where ' ~ dbt_merge.target_rows_condition(plan, false)
      ~ ' and ' ~ dbt_merge.exists_match(plan.deduped or plan.stage, plan.key_columns, 'DBT_INTERNAL_DEST', compare=plan.compare)
      ~ ' group by ' ~ dbt_merge.compared_list(plan.compare, plan.key_columns, 'DBT_INTERNAL_DEST')
      ~ ' having count(*) > 1) as dbt_merge_duplicates',
      'dbt_merge_check').rows %}
  {{ return(rows[0][0] if rows else '') }}
{% endmacro %}

{#- count and an example of the SELECT rows whose key matches no considered target row but some
    target row outside incremental_predicates. -#}
{% macro _keys_outside_predicates_sql(plan) %}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set inside = '(' ~ plan.predicates | map('string') | map('trim') | join(') and (') ~ ')' -%}
  {%- set example_parts = [] -%}
  {%- for key in plan.key_columns -%}
    {%- do example_parts.append('cast(' ~ src ~ '.' ~ dbt_merge.quote_identifier(key) ~ ' as string)') -%}
  {%- endfor -%}
  select count(*), min(concat_ws(', ', {{ example_parts | join(', ') }}))
  from {{ plan.deduped or plan.stage }} as {{ src }}
  where {{ dbt_merge.exists_match(plan.target ~ ' as ' ~ dst, plan.key_columns, src, 'not coalesce(' ~ inside ~ ', false)', compare=plan.compare) }}
    and not {{ dbt_merge.exists_match(plan.target ~ ' as ' ~ dst, plan.key_columns, src, 'coalesce(' ~ inside ~ ', false)', compare=plan.compare) }}
{% endmacro %}
