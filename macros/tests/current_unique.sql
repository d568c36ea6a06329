{#-
  Generic test for a history table (strategy='history', or a dbt snapshot's table): each key has
  at most one current version, and its versions' validity intervals do not overlap. Returns the
  offending versions (the key, dbt_valid_from, dbt_valid_to and the problem: 'more than one
  current version', 'overlaps the next version', 'ends before it starts', 'no dbt_valid_from').
    data_tests:
      - dbt_merge.current_unique                      # the model's unique_key and column names
      - dbt_merge.current_unique: {columns: [a, b]}
      - dbt_merge.current_unique: {columns: id, valid_from: start_at, valid_to: end_at,
                                   valid_to_current: "cast('9999-12-31' as timestamp)"}
  Without them, the column names are the model's (or snapshot's) snapshot_meta_column_names, else
  dbt_valid_from/dbt_valid_to, and current versions are those whose dbt_valid_to is NULL or the
  model's dbt_valid_to_current. Versions of a NULL key are left out (a history merge never writes
  one; unique_key's own tests catch them).
-#}
{% test current_unique(model, columns=none, valid_from=none, valid_to=none, valid_to_current=none) %}
  {{ return(adapter.dispatch('test_current_unique', 'dbt_merge')(model, columns, valid_from, valid_to, valid_to_current)) }}
{% endtest %}

{% macro default__test_current_unique(model, columns, valid_from, valid_to, valid_to_current) %}
  {%- set node_config = dbt_merge.tested_node_config(model) -%}
  {%- set key_columns = dbt_merge.as_list(columns) if columns is not none
                        else dbt_merge.as_list(node_config.get('unique_key')) -%}
  {%- if execute and key_columns | length == 0 -%}
    {{ exceptions.raise_compiler_error("dbt_merge.current_unique test on " ~ model ~ ": no columns given and "
        ~ "the model has no unique_key config. Pass columns: [...] to the test or set unique_key on the model.") }}
  {%- endif -%}
  {%- set names = node_config.get('snapshot_meta_column_names') or node_config.get('snapshot_table_column_names') or {} -%}
  {%- set vf = dbt_merge.quote_identifier(valid_from or names.get('dbt_valid_from') or 'dbt_valid_from') -%}
  {%- set vt = dbt_merge.quote_identifier(valid_to or names.get('dbt_valid_to') or 'dbt_valid_to') -%}
  {%- set current_end = valid_to_current or node_config.get('dbt_valid_to_current') -%}
  {%- set is_current = '(' ~ vt ~ ' is null' ~ (' or ' ~ vt ~ ' = (' ~ current_end ~ ')' if current_end else '') ~ ')' -%}
  {%- set keys = dbt_merge.column_list(key_columns) -%}
  {#- versions of one key: byte for byte, as the merge judges keys (see unique_key) -#}
  {%- set partition = dbt_merge.compared_list(dbt_merge.key_compare(model, key_columns), key_columns) -%}
  {%- set present = [] -%}
  {%- for col in key_columns -%}
    {%- do present.append(dbt_merge.quote_identifier(col) ~ ' is not null') -%}
  {%- endfor -%}
  select {{ keys }}, {{ vf }}, {{ vt }},
    case when currents > 1 and iscurrent = 1 then 'more than one current version'
         when {{ vf }} is null then 'no dbt_valid_from'
         when iscurrent = 0 and {{ vt }} < {{ vf }} then 'ends before it starts'
         else 'overlaps the next version' end as problem
  from (
    select {{ keys }}, {{ vf }}, {{ vt }},
      case when {{ is_current }} then 1 else 0 end as iscurrent,
      sum(case when {{ is_current }} then 1 else 0 end) over (partition by {{ partition }}) as currents,
      lead({{ vf }}) over (partition by {{ partition }} order by {{ vf }} asc nulls first, {{ vt }} asc nulls last) as nextfrom
    from {{ model }}
    where {{ present | join(' and ') }}
  ) as versions
  where (currents > 1 and iscurrent = 1)
     or {{ vf }} is null
     or (iscurrent = 0 and {{ vt }} < {{ vf }})
     or (nextfrom is not null and (iscurrent = 1 or {{ vt }} > nextfrom))
{% endmacro %}


{#- The config of the model (or snapshot) a test is attached to, or {} (see _configured_unique_key). -#}
{% macro tested_node_config(relation) %}
  {% if execute %}
    {% set attached = model.get('attached_node') if model is mapping else none %}
    {% if attached and attached in graph.nodes %}
      {{ return(graph.nodes[attached].config) }}
    {% endif %}
    {% if relation.identifier is defined %}
      {% for node in graph.nodes.values() %}
        {% if node.resource_type in ['model', 'snapshot', 'seed']
              and (node.alias or node.name) | lower == relation.identifier | lower
              and node.schema | lower == relation.schema | lower %}
          {{ return(node.config) }}
        {% endif %}
      {% endfor %}
    {% endif %}
  {% endif %}
  {{ return({}) }}
{% endmacro %}
