{% macro count_rows(relation) %}
  {{ return(dbt_merge.run_sql('select count(*) from ' ~ relation, 'dbt_merge_count').rows[0][0] | int) }}
{% endmacro %}
