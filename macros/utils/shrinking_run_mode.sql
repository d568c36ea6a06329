{#- '--empty' or '--sample' when dbt runs with a flag that shrinks what ref() and source() return
    (an empty or sampled SELECT), else none. A merge then must not write into an existing table:
    full_merge would delete every row the shrunken SELECT lacks. -#}
{% macro shrinking_run_mode() %}
  {% if invocation_args_dict.get('empty') %}
    {{ return('--empty') }}
  {% elif invocation_args_dict.get('sample') %}
    {{ return('--sample') }}
  {% endif %}
  {{ return(none) }}
{% endmacro %}
