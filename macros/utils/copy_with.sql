{#- A copy of the dict `base` with `changes` over it (`base` is left as it is): a phase that needs
    the plan with a change of its own works on such a copy, since only the flow changes the plan. -#}
{% macro copy_with(base, changes) %}
  {% set copy = {} %}
  {% do copy.update(base) %}
  {% do copy.update(changes) %}
  {{ return(copy) }}
{% endmacro %}
