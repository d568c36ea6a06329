{#- Whether the classify lists every source row (plan.every_source_row, which the count and the
    write read too): on DuckDB, for narrow changes, when the SELECT is at least half the table. -#}
{% macro every_source_row(plan) %}
  {{ return(adapter.dispatch('every_source_row', 'dbt_merge')(plan)) }}
{% endmacro %}

{% macro default__every_source_row(plan) %}
  {{ return(false) }}
{% endmacro %}

{% macro duckdb__every_source_row(plan) %}
  {% if not plan.writes_source_rows %}
    {{ return(false) }}
  {% endif %}
  {#- Listing every source row pays off when the SELECT is most of the table (a snapshot: most
      rows matched and unchanged); for an increment the unmatched rows only add writes (1M new
      and updated rows into 10M: +8% with every source row listed). Both counts come from
      metadata (or come from measure_source). -#}
  {% set sizes = plan.sizes or dbt_merge.run_sql('select (select count(*) from ' ~ (plan.deduped or plan.stage)
      ~ '), ' ~ dbt_merge.target_rows_sql(plan), 'dbt_merge_count').rows[0] %}
  {{ return((sizes[0] | int) * 2 >= (sizes[1] | int)) }}
{% endmacro %}
