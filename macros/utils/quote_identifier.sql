{#- Quote one identifier, escaping the quote character inside it (adapter.quote does not). -#}
{% macro quote_identifier(name) %}
  {{ return(adapter.dispatch('quote_identifier', 'dbt_merge')(name)) }}
{% endmacro %}

{% macro default__quote_identifier(name) %}
  {{ return('"' ~ (name | replace('"', '""')) ~ '"') }}
{% endmacro %}

{# Spark quotes with backticks. #}
{% macro spark__quote_identifier(name) %}
  {{ return('`' ~ (name | replace('`', '``')) ~ '`') }}
{% endmacro %}
