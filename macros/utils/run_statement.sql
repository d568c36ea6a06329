{#- Run one statement that returns no rows (DDL, INSERT, DELETE, MERGE, CACHE) inside the model's
    transaction, without fetching a result: over dbt-spark's thrift method, fetching the result
    of such a statement fails ('NoneType' object is not iterable) after it ran on the server.
    Queries whose rows we read go through run_sql. -#}
{% macro run_statement(sql, name='dbt_merge') %}
  {% call statement(name, fetch_result=false, auto_begin=true) %}{{ sql }}{% endcall %}
{% endmacro %}
