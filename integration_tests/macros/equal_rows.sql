{#-
  Generic test: the model holds exactly the rows of compare_model (as a multiset), on the
  compare_model's columns. Fails with one row per difference, saying which side it is on.
-#}
{% test equal_rows(model, compare_model) %}
  {%- set columns = adapter.get_columns_in_relation(compare_model) | map(attribute='name') | list if execute else [] -%}
  {%- set column_csv = dbt_merge.column_list(columns) if columns else '*' -%}
  with actual as (
    select {{ column_csv }} from {{ model }}
  ), expected as (
    select {{ column_csv }} from {{ compare_model }}
  ), missing as (
    select * from expected except all select * from actual
  ), unexpected as (
    select * from actual except all select * from expected
  )
  select 'missing from the model' as difference, missing.* from missing
  union all
  select 'not expected in the model' as difference, unexpected.* from unexpected
{% endtest %}
