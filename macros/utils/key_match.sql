{#- `left.k1 = right.k1 and left.k2 = right.k2`; keys are never NULL (validated), so `=` is exact. -#}
{% macro key_match(key_columns, left, right) %}
  {% set parts = [] %}
  {% for key in key_columns %}
    {% set q = dbt_merge.quote_identifier(key) %}
    {% do parts.append(left ~ '.' ~ q ~ ' = ' ~ right ~ '.' ~ q) %}
  {% endfor %}
  {{ return(parts | join(' and ')) }}
{% endmacro %}
