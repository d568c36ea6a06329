{#- Write the classified changes (plan.changes) to the target. `counts` lets engines skip no-op statements. -#}
{% macro apply_changes(plan, counts) %}
  {{ return(adapter.dispatch('apply_changes', 'dbt_merge')(plan, counts)) }}
{% endmacro %}

{#- Delete the rows being replaced or removed, then insert the new row images, in the model's
    transaction. On DuckDB 2.0 this measured faster than MERGE INTO (see BENCHMARKS.md). -#}
{% macro default__apply_changes(plan, counts) %}
  {% if counts.updated + counts.deleted > 0 %}
    {% do dbt_merge.run_sql(
        'delete from ' ~ plan.target ~ ' where exists (select 1 from ' ~ plan.changes ~ ' as dbt_merge_changes'
        ~ " where dbt_merge_changes.dbt_merge_action in ('U', 'D') and "
        ~ dbt_merge.key_match(plan.key_columns, 'dbt_merge_changes', dbt_merge.quote_identifier(plan.target.identifier)) ~ ')',
        'dbt_merge_delete') %}
  {% endif %}
  {% if counts.inserted + counts.updated > 0 %}
    {% set columns = dbt_merge.column_list(plan.target_names) %}
    {% do dbt_merge.run_sql(
        'insert into ' ~ plan.target ~ ' (' ~ columns ~ ') select ' ~ columns ~ ' from ' ~ plan.changes
        ~ " where dbt_merge_action in ('I', 'U')", 'dbt_merge_insert') %}
  {% endif %}
{% endmacro %}

{#- DuckDB: full_merge's target rows missing from the source are not in the changes (see
    duckdb__classify_changes_sql): delete them by an anti-join on the key, then apply the rest. -#}
{% macro duckdb__apply_changes(plan, counts) %}
  {% if plan.actions.target_only == 'delete' and counts.deleted > 0 %}
    {% do dbt_merge.run_sql('delete from ' ~ plan.target ~ ' as DBT_INTERNAL_DEST where '
        ~ dbt_merge._target_rows_condition(plan, true), 'dbt_merge_delete') %}
  {% endif %}
  {% do dbt_merge.default__apply_changes(plan, {'inserted': counts.inserted, 'updated': counts.updated, 'deleted': 0}) %}
{% endmacro %}

{#- Spark: one MERGE INTO, which Iceberg and Delta commit atomically as one snapshot. Rows left
    unchanged are not in its source, so files holding only unchanged rows are not rewritten. -#}
{% macro spark__apply_changes(plan, counts) %}
  {% if counts.inserted + counts.updated + counts.deleted > 0 %}
    {% do dbt_merge.run_sql(dbt_merge.merge_into_sql(plan), 'dbt_merge_merge') %}
  {% endif %}
{% endmacro %}
