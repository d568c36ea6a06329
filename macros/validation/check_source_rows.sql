{#- Run source_check_sql and raise the first problem found. Nothing has been written yet.
    Returns the number of keys whose deduplicate candidates are identical repeats (0 otherwise). -#}
{% macro check_source_rows(plan) %}
  {% set row = dbt_merge.run_sql(dbt_merge.source_check_sql(plan), 'dbt_merge_check').rows[0] %}
  {% for key in plan.key_columns %}
    {% set nulls = row[loop.index0] | int %}
    {% if nulls > 0 %}
      {{ dbt_merge.raise_merge_error("unique_key column '" ~ key ~ "' is NULL in " ~ nulls
          ~ " row(s) of the model's SELECT. A key must identify a row: filter those rows out "
          ~ "or coalesce the key in the SELECT. The target was not changed.") }}
    {% endif %}
  {% endfor %}
  {% if not plan.actions.dedupe and row[plan.key_columns | length] | int > 0 %}
    {#-- some key repeats: ask again for how many keys and an example --#}
    {% set row = dbt_merge.run_sql(dbt_merge.source_check_sql(plan, detail=true), 'dbt_merge_check').rows[0] %}
  {% endif %}
  {% set bad_keys = row[plan.key_columns | length] | int %}
  {% if bad_keys > 0 %}
    {% set example = '(' ~ plan.key_columns | join(', ') ~ ') = (' ~ row[plan.key_columns | length + 1] ~ ')' %}
    {% if not plan.actions.dedupe %}
      {% set message = bad_keys ~ " unique_key value(s) occur more than once in the model's SELECT, e.g. "
          ~ example ~ ". Make the key unique in the SELECT, fix unique_key, or use strategy='deduplicate' "
          ~ "with dedup_order_by to keep one row per key." %}
    {% elif plan.order_by %}
      {% set message = bad_keys ~ " key(s) have different rows that tie on dedup_order_by ("
          ~ dbt_merge.as_list(config.get('dedup_order_by')) | join(', ') ~ "), e.g. " ~ example
          ~ ". Add a tie-breaking column to dedup_order_by so one row per key wins." %}
    {% else %}
      {% set message = bad_keys ~ " key(s) have rows that differ and no dedup_order_by is set, e.g. "
          ~ example ~ ". Set dedup_order_by (e.g. 'updated_at desc') to choose the row to keep." %}
    {% endif %}
    {{ dbt_merge.raise_merge_error(message ~ " The target was not changed.") }}
  {% endif %}
  {{ return(row[plan.key_columns | length + 2] | int if plan.actions.dedupe else 0) }}
{% endmacro %}
