{#- The window ORDER BY of dedup_order_by (set: dedupe_source_sql uses a window only then): NULLs
    last on every engine. -#}
{% macro dedup_order_clause(plan) %}
  {% set parts = [] %}
  {% for term in plan.order_by %}
    {% do parts.append(dbt_merge.quote_identifier(term.column) ~ (' desc' if term.descending else ' asc') ~ ' nulls last') %}
  {% endfor %}
  {{ return('order by ' ~ parts | join(', ')) }}
{% endmacro %}
