{#- The columns of a table or view (dbt Columns, in the relation's order), every legal name
    included. -#}
{% macro relation_columns(relation) %}
  {{ return(adapter.dispatch('relation_columns', 'dbt_merge')(relation)) }}
{% endmacro %}

{% macro default__relation_columns(relation) %}
  {{ return(adapter.get_columns_in_relation(relation)) }}
{% endmacro %}

{# Spark: dbt-spark's get_columns_in_relation reads `describe extended` and stops at the first
   column whose name starts with '#' (it takes the row for a section header): a column `#note`
   would hide itself and every column after it. `describe table` lists the columns first, each
   with its type; the first row without a type ends them (the empty row before Iceberg's
   '# Partitioning', the '# Partition Information' header of a partitioned table). Same text
   over session, thrift and ODBC. Hudi's metadata columns are left out, as dbt-spark does. #}
{% macro spark__relation_columns(relation) %}
  {% set columns = [] %}
  {% set state = namespace(done=false) %}
  {% for row in dbt_merge.run_sql('describe table ' ~ relation, 'dbt_merge_describe').rows %}
    {% if not state.done and not (row[1] or '') | trim %}
      {% set state.done = true %}
    {% elif not state.done and row[0] not in ['_hoodie_commit_time', '_hoodie_commit_seqno', '_hoodie_record_key',
                                              '_hoodie_partition_path', '_hoodie_file_name'] %}
      {% do columns.append(api.Column.create(row[0], row[1])) %}
    {% endif %}
  {% endfor %}
  {{ return(columns) }}
{% endmacro %}
