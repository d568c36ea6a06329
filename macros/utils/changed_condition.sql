{#- True when two values differ, treating NULL as equal to NULL. -#}
{% macro changed_condition(left, right) %}
  {{ return(adapter.dispatch('changed_condition', 'dbt_merge')(left, right)) }}
{% endmacro %}

{% macro default__changed_condition(left, right) %}
  {{ return(left ~ ' is distinct from ' ~ right) }}
{% endmacro %}
