{#- ref('<name>_initial') on the first run, ref('<name>_increment') on the second. -#}
{% macro phase_ref(name) %}
  {% if var('phase') not in ['initial', 'increment'] %}
    {{ exceptions.raise_compiler_error("var phase must be 'initial' or 'increment', got '" ~ var('phase') ~ "'") }}
  {% endif %}
  {{ return(ref(name ~ '_' ~ var('phase'))) }}
{% endmacro %}
