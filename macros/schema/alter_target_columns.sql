{#- Add, drop and retype target columns (add/remove: dbt Columns; retype: [{column, new_type}]). -#}
{% macro alter_target_columns(relation, add=[], remove=[], retype=[]) %}
  {{ return(adapter.dispatch('alter_target_columns', 'dbt_merge')(relation, add, remove, retype)) }}
{% endmacro %}

{% macro default__alter_target_columns(relation, add, remove, retype) %}
  {% for col in add %}
    {% do dbt_merge.run_statement('alter table ' ~ relation ~ ' add column ' ~ dbt_merge.quote_identifier(col.name) ~ ' ' ~ col.data_type) %}
  {% endfor %}
  {% for col in remove %}
    {% do dbt_merge.run_statement('alter table ' ~ relation ~ ' drop column ' ~ dbt_merge.quote_identifier(col.name)) %}
  {% endfor %}
  {% for r in retype %}
    {% do dbt_merge.run_statement('alter table ' ~ relation ~ ' alter column ' ~ dbt_merge.quote_identifier(r.column.name) ~ ' set data type ' ~ r.new_type) %}
  {% endfor %}
{% endmacro %}

{# Spark (Iceberg, Delta): column lists in one statement each; Iceberg widens types in place. #}
{% macro spark__alter_target_columns(relation, add, remove, retype) %}
  {% if add %}
    {% set defs = [] %}
    {% for col in add %}{% do defs.append(dbt_merge.quote_identifier(col.name) ~ ' ' ~ col.data_type) %}{% endfor %}
    {% do dbt_merge.run_statement('alter table ' ~ relation ~ ' add columns (' ~ defs | join(', ') ~ ')') %}
  {% endif %}
  {% if remove %}
    {% do dbt_merge.run_statement('alter table ' ~ relation ~ ' drop columns (' ~ dbt_merge.column_list(remove | map(attribute='name') | list) ~ ')') %}
  {% endif %}
  {% for r in retype %}
    {% do dbt_merge.run_statement('alter table ' ~ relation ~ ' alter column ' ~ dbt_merge.quote_identifier(r.column.name) ~ ' type ' ~ r.new_type) %}
  {% endfor %}
{% endmacro %}
