{#- ref(initial) on the first run (var phase=initial), ref(increment) on the second. -#}
{% macro phase_ref(initial, increment) %}
  {% if var('phase') == 'initial' %}
    {{ return(ref(initial)) }}
  {% elif var('phase') == 'increment' %}
    {{ return(ref(increment)) }}
  {% endif %}
  {{ exceptions.raise_compiler_error("var phase must be 'initial' or 'increment', got '" ~ var('phase') ~ "'") }}
{% endmacro %}

{#- true on the second run -#}
{% macro is_increment() %}
  {{ return(var('phase') == 'increment') }}
{% endmacro %}
