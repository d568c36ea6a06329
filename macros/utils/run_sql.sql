{#- Run one query inside the model's transaction (auto_begin) and return its rows (statements
    that return none go through run_statement). -#}
{% macro run_sql(sql, name='dbt_merge') %}
  {% call statement(name, fetch_result=true, auto_begin=true) %}{{ sql }}{% endcall %}
  {{ return(load_result(name).table) }}
{% endmacro %}
