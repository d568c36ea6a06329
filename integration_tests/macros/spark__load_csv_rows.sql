{#-
  Workaround for dbt-spark 1.11 seeds over `method: session`: an empty CSV cell is bound as the
  text 'None', which stays 'None' in string columns. Render empty cells as NULL instead.
  (Only the integration project's seeds need this; the dbt_merge macros are not involved.)
-#}
{% macro spark__load_csv_rows(model, agate_table) %}
  {% set column_override = model['config'].get('column_types', {}) %}
  {% set statements = [] %}
  {% for chunk in agate_table.rows | batch(get_batch_size()) %}
    {% set bindings = [] %}
    {% set sql %}
      insert into {{ this.render() }} values
      {% for row in chunk -%}
        ({%- for col_name in agate_table.column_names -%}
          {%- set type = column_override.get(col_name, adapter.convert_type(agate_table, loop.index0)) -%}
          {%- if row[loop.index0] is none -%}
            cast(null as {{ type }})
          {%- else -%}
            {%- do bindings.append(row[loop.index0]) -%}
            cast({{ get_binding_char() }} as {{ type }})
          {%- endif -%}
          {%- if not loop.last %},{% endif -%}
        {%- endfor -%})
        {%- if not loop.last %},{% endif %}
      {% endfor %}
    {% endset %}
    {% do adapter.add_query(sql, bindings=bindings, abridge_sql_log=True) %}
    {% if loop.index0 == 0 %}{% do statements.append(sql) %}{% endif %}
  {% endfor %}
  {{ return(statements[0]) }}
{% endmacro %}
