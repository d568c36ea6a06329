{#- The staged SELECT with the columns listed in plan.conversions converted to the target's
    types, and the soft-delete columns it lacks added (plan.extras): what the
    checks, the classification and the writes then read, so that keys are judged unique and
    matched, and values compared, as the target stores them. -#}
{% macro converted_source_sql(plan) %}
  {%- set converted = {} -%}
  {%- for c in plan.conversions -%}
    {%- do converted.update({c.column: c.sql}) -%}
  {%- endfor -%}
  {%- set extra_names = plan.extras | map(attribute='column') | map(attribute='name') | list -%}
  select
  {%- for name in plan.source_names | reject('in', extra_names) %}
    {{ converted.get(name, dbt_merge.quote_identifier(name)) }} as {{ dbt_merge.quote_identifier(name) }}{{ ',' if not loop.last }}
  {%- endfor %}
  {%- for extra in plan.extras %},
    {{ extra.sql }} as {{ dbt_merge.quote_identifier(extra.column.name) }}
  {%- endfor %}
  from {{ plan.raw_stage }}
{% endmacro %}
