{#- The window ORDER BY that picks the row deduplicate keeps: NULLs last on every engine.
    Without dedup_order_by every row of a key must be identical, so any order will do; the keys
    are used because Spark's row_number() requires an ordered window. -#}
{% macro dedup_order_clause(plan) %}
  {% set parts = [] %}
  {% for term in plan.order_by %}
    {% do parts.append(dbt_merge.quote_identifier(term.column) ~ (' desc' if term.descending else ' asc') ~ ' nulls last') %}
  {% endfor %}
  {% if not parts %}
    {% do parts.append(dbt_merge.column_list(plan.key_columns)) %}
  {% endif %}
  {{ return('order by ' ~ parts | join(', ')) }}
{% endmacro %}
