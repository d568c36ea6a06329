{#- A SQL string literal. -#}
{% macro sql_string(value) %}
  {{ return(adapter.dispatch('sql_string', 'dbt_merge')(value)) }}
{% endmacro %}

{% macro default__sql_string(value) %}
  {{ return("'" ~ (value | string | replace("'", "''")) ~ "'") }}
{% endmacro %}

{# Spark reads '' inside a literal as two adjacent literals; it escapes with a backslash. #}
{% macro spark__sql_string(value) %}
  {{ return("'" ~ (value | string | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'") }}
{% endmacro %}
