{#-
  Generic test: fails on duplicate keys and on NULL keys, returning each offending key with its
  row count. `columns` is a column or a list; without it, the model's own unique_key config.
    data_tests:
      - dbt_merge.unique_key                     # the model's unique_key
      - dbt_merge.unique_key: {columns: [a, b]}
-#}
{% test unique_key(model, columns=none) %}
  {{ return(adapter.dispatch('test_unique_key', 'dbt_merge')(model, columns)) }}
{% endtest %}

{% macro default__test_unique_key(model, columns) %}
  {%- set key_columns = dbt_merge.as_list(columns) if columns is not none
                        else dbt_merge._configured_unique_key(model) -%}
  {%- if execute and key_columns | length == 0 -%}
    {{ exceptions.raise_compiler_error("dbt_merge.unique_key test on " ~ model ~ ": no columns given and "
        ~ "the model has no unique_key config. Pass columns: [...] to the test or set unique_key on the model.") }}
  {%- endif -%}
  {%- set null_checks = [] -%}
  {%- for col in key_columns -%}
    {%- do null_checks.append(dbt_merge.quote_identifier(col) ~ ' is null') -%}
  {%- endfor -%}
  {%- set any_null = '(' ~ (null_checks | join(' or ') or 'false') ~ ')' -%}
  select
    {{ dbt_merge.column_list(key_columns) }}{{ ',' if key_columns }}
    count(*) as n_records,
    case when {{ any_null }} then 'null key' else 'duplicate key' end as problem
  from {{ model }}
  {%- if key_columns %}
  group by {{ dbt_merge.column_list(key_columns) }}
  {%- endif %}
  having count(*) > 1 or {{ any_null }}
{% endmacro %}


{#-
  The unique_key config of the model a test is attached to. Inside this macro `model` is the
  test node (the test's own `model` argument is a relation, or with a `where:` config a
  subquery string, so it cannot be looked up by name); dbt records the tested model as its
  attached_node. A test without one (e.g. on a source) falls back to the relation's name.
-#}
{% macro _configured_unique_key(relation) %}
  {{ return(dbt_merge.as_list(dbt_merge._tested_node_config(relation).get('unique_key'))) }}
{% endmacro %}
