{#- Levenshtein distance between two strings (insertions, deletions, substitutions). -#}
{% macro edit_distance(a, b) %}
  {% set ns = namespace(previous=range(b | length + 1) | list) %}
  {% for i in range(a | length) %}
    {% set current = [i + 1] %}
    {% for j in range(b | length) %}
      {% do current.append([ns.previous[j + 1] + 1, current[j] + 1,
                            ns.previous[j] + (0 if a[i] == b[j] else 1)] | min) %}
    {% endfor %}
    {% set ns.previous = current %}
  {% endfor %}
  {{ return(ns.previous[-1]) }}
{% endmacro %}
