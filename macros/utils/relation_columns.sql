{#- The columns of a table or view (dbt Columns, in the relation's order), every legal name
    included. -#}
{% macro relation_columns(relation) %}
  {{ return(adapter.dispatch('relation_columns', 'dbt_merge')(relation)) }}
{% endmacro %}

{% macro default__relation_columns(relation) %}
  {{ return(adapter.get_columns_in_relation(relation)) }}
{% endmacro %}

{#- The columns of a work relation the run has just made (it exists): relation_columns, except
    on DuckDB, where the `describe` dbt-duckdb's get_columns_in_relation runs is run here as one
    of the run's statements (dbt's adapter method renders it through a macro context of its own,
    every macro of the project in it: about 3.5 ms a call, 2026-12-01). -#}
{% macro work_relation_columns(relation) %}
  {{ return(adapter.dispatch('work_relation_columns', 'dbt_merge')(relation)) }}
{% endmacro %}

{% macro default__work_relation_columns(relation) %}
  {{ return(dbt_merge.relation_columns(relation)) }}
{% endmacro %}

{#- dbt Columns of `describe`'s rows (name, DuckDB's type name), as dbt-duckdb makes them -#}
{% macro duckdb__work_relation_columns(relation) %}
  {% set columns = [] %}
  {% for row in dbt_merge.run_sql('select column_name, column_type from (describe ' ~ relation ~ ')',
                                  'dbt_merge_describe').rows %}
    {% do columns.append(api.Column.create(row[0], row[1])) %}
  {% endfor %}
  {{ return(columns) }}
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

{#- The table a merge writes, as the run reads it once it reloaded it (reload_table):
    {columns: relation_columns' list, properties: {name: value} of an Iceberg table's properties
    (its current snapshot's id among them), or none where they are not read with the columns}.
    A writer's target (target_writer) is described by its writer. -#}
{% macro described_target(relation) %}
  {#- a writer's target (a Parquet dataset): the columns its writer read from the files -#}
  {% set writer = dbt_merge.target_writer() %}
  {% if writer is not none %}
    {{ return(writer.described_target()) }}
  {% endif %}
  {{ return(adapter.dispatch('described_target', 'dbt_merge')(relation)) }}
{% endmacro %}

{% macro default__described_target(relation) %}
  {{ return({'columns': dbt_merge.relation_columns(relation), 'properties': none}) }}
{% endmacro %}

{#- DuckDB: the columns by the run's own `describe` (work_relation_columns). Not with the table's
    definition in the same statement: selected beside a subquery, `describe`'s rows of a table
    of more than 2,048 columns came back out of the table's order with preserve_insertion_order
    off (red team helper-87). -#}
{% macro duckdb__described_target(relation) %}
  {{ return({'columns': dbt_merge.duckdb__work_relation_columns(relation), 'properties': none}) }}
{% endmacro %}

{# Spark: `describe table extended`, one statement for the columns (as relation_columns reads
   them: the first section, ended by the first row without a type) and, for an Iceberg table,
   its properties (the 'Table Properties' row of the details section, parsed by
   _listed_properties; none when that text cannot be read exactly, and the readers ask with
   SHOW TBLPROPERTIES instead). #}
{% macro spark__described_target(relation) %}
  {% set columns = [] %}
  {% set meta = {} %}
  {% set state = namespace(section='columns') %}
  {% for row in dbt_merge.run_sql('describe table extended ' ~ relation, 'dbt_merge_describe').rows %}
    {% set name = row[0] or '' %}
    {% set type = (row[1] or '') | trim %}
    {% if state.section == 'columns' and not type %}
      {% set state.section = 'other' %}
    {% elif state.section == 'columns' %}
      {% if name not in ['_hoodie_commit_time', '_hoodie_commit_seqno', '_hoodie_record_key',
                         '_hoodie_partition_path', '_hoodie_file_name'] %}
        {% do columns.append(api.Column.create(name, row[1])) %}
      {% endif %}
    {% elif name | trim == '# Detailed Table Information' and not type %}
      {% set state.section = 'details' %}
    {% elif state.section == 'details' and name not in meta %}
      {% do meta.update({name: row[1] or ''}) %}
    {% endif %}
  {% endfor %}
  {% set properties = dbt_merge._listed_properties(meta.get('Table Properties'))
                      if (meta.get('Provider') or '') | trim | lower == 'iceberg' else none %}
  {{ return({'columns': columns, 'properties': properties}) }}
{% endmacro %}

{#- Spark's listing of a table's properties in DESCRIBE TABLE EXTENDED, '[k=v,k=v]' (sorted by
    name), as {k: v}; none when it cannot be read back exactly: a value (or a name) holding a
    comma or a bracket makes the listing ambiguous (one property's value could read as another
    property, e.g. 'x'='1,current-snapshot-id=5'), so any piece without '=', any name listed twice,
    or an Iceberg table's listing without its snapshot id gives none. -#}
{% macro _listed_properties(text) %}
  {% set text = (text or '') | trim %}
  {% if not (text.startswith('[') and text.endswith(']')) %}
    {{ return(none) }}
  {% endif %}
  {% set inner = text[1:-1] %}
  {% if '[' in inner or ']' in inner %}
    {{ return(none) }}
  {% endif %}
  {% set properties = {} %}
  {% for piece in (inner.split(',') if inner else []) %}
    {% if '=' not in piece or piece.split('=')[0] in properties %}
      {{ return(none) }}
    {% endif %}
    {% do properties.update({piece.split('=')[0]: piece[piece.split('=')[0] | length + 1:]}) %}
  {% endfor %}
  {{ return(properties if 'current-snapshot-id' in properties else none) }}
{% endmacro %}
