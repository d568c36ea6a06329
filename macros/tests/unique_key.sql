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
  {%- set compare = dbt_merge.key_compare(model, key_columns) -%}
  {%- if compare %}
  {#- keys judged byte for byte, as the merge judges them (a nocase default_collation or a
      column's COLLATE would make 'a' and 'A' one key here and two in the merge) -#}
  select
    {%- for col in key_columns %}
    any_value({{ dbt_merge.quote_identifier(col) }}) as {{ dbt_merge.quote_identifier(col) }},
    {%- endfor %}
    count(*) as n_records,
    case when bool_or({{ any_null }}) then 'null key' else 'duplicate key' end as problem
  from {{ model }}
  group by {{ dbt_merge.compared_list(compare, key_columns) }}
  having count(*) > 1 or bool_or({{ any_null }})
  {%- else %}
  select
    {{ dbt_merge.column_list(key_columns) }}{{ ',' if key_columns }}
    count(*) as n_records,
    case when {{ any_null }} then 'null key' else 'duplicate key' end as problem
  from {{ model }}
  {%- if key_columns %}
  group by {{ dbt_merge.column_list(key_columns) }}
  {%- endif %}
  having count(*) > 1 or {{ any_null }}
  {%- endif %}
{% endmacro %}


{#-
  The unique_key config of the model a test is attached to. Inside this macro `model` is the
  test node (the test's own `model` argument is a relation, or with a `where:` config a
  subquery string, so it cannot be looked up by name); dbt records the tested model as its
  attached_node. A test without one (e.g. on a source) falls back to the relation's name.
-#}
{% macro _configured_unique_key(relation) %}
  {{ return(dbt_merge.as_list(dbt_merge.tested_node_config(relation).get('unique_key'))) }}
{% endmacro %}


{#- compare_kinds of the tested relation's `key_columns` that an engine could compare by a
    collation (on DuckDB: text, JSON, nested values holding text), read from the relation as the
    test sees it (a `where:` config included); {} elsewhere or at parse time. -#}
{% macro key_compare(relation, key_columns) %}
  {{ return(adapter.dispatch('key_compare', 'dbt_merge')(relation, key_columns)) }}
{% endmacro %}

{% macro default__key_compare(relation, key_columns) %}
  {{ return({}) }}
{% endmacro %}

{% macro duckdb__key_compare(relation, key_columns) %}
  {% if not execute or not key_columns %}
    {{ return({}) }}
  {% endif %}
  {#- a model not built yet (dbt compile, dbt docs generate on a fresh database): nothing to
      describe; the test itself runs after its model is built. A command that compiles tests
      without running them shows them with the engine's own comparison. -#}
  {% if flags.WHICH not in ['test', 'build', 'retry', 'run'] %}
    {{ return({}) }}
  {% endif %}
  {% if relation is not string and relation.identifier is defined and load_relation(relation) is none %}
    {{ return({}) }}
  {% endif %}
  {% set wanted = key_columns | map('lower') | list %}
  {% set columns = [] %}
  {% for row in dbt_merge.run_sql('describe select * from ' ~ relation, 'dbt_merge_describe').rows
       if row[0] | lower in wanted %}
    {% do columns.append(api.Column.create(row[0], row[1])) %}
  {% endfor %}
  {{ return(dbt_merge.compare_kinds(columns)) }}
{% endmacro %}
