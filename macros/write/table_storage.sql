{#-
  How an existing table is stored, read from the engine (never from the model's config, which may
  disagree with the table that exists):
    provider      as the catalog reports it: iceberg, delta, hudi, parquet, orc, hive, csv, ...
    format        the files' format: the provider, or for a Hive table its input format
                  (parquet, orc, text, sequencefile, avro, rcfile, or the class name)
    columns       the table's columns in its own order (partition columns last)
    types         each column's type, both lower case ({name: type})
    kind          the catalog's type of the relation, upper case (VIEW, MANAGED, EXTERNAL; ''
                  where it gives none)
    partition_by  the partition columns, in partition order ([] when not partitioned; Iceberg's
                  partition transforms are not listed: MERGE INTO handles them)
    partitioned   whether the table has partitions, by columns or by transforms
    write         'merge' (MERGE INTO), 'overwrite' (INSERT OVERWRITE of the affected partitions)
                  or none (neither is supported)
    merge_on_read an Iceberg table whose MERGE writes delete files (table property
                  write.merge.mode=merge-on-read) instead of rewriting the data files it touches
    format_version  an Iceberg table's format version (2, 3), none for other tables
                  (merge_on_branch counts a merge from its commit on merge-on-read and v3 tables)
-#}
{% macro table_storage(relation) %}
  {{ return(adapter.dispatch('table_storage', 'dbt_merge')(relation)) }}
{% endmacro %}

{% macro default__table_storage(relation) %}
  {{ dbt_merge.raise_merge_error("no table storage formats for adapter '" ~ adapter.type() ~ "'.") }}
{% endmacro %}

{# Spark: `describe table extended`, the one statement that reports the provider, the Hive input
   format and the partition columns of every kind of table, and that works over session, thrift
   and ODBC. dbt-spark's cached relation flags (is_iceberg, ...) come from `show table extended`,
   which reports an Iceberg table of a SparkSessionCatalog as 'Provider: hive'. #}
{% macro spark__table_storage(relation) %}
  {% set rows = dbt_merge.run_sql('describe table extended ' ~ relation, 'dbt_merge_describe').rows %}
  {% set columns = [] %}
  {% set types = {} %}
  {% set partition_by = [] %}
  {% set meta = {} %}
  {% set state = namespace(section='columns', format='', transforms=0) %}
  {% for row in rows %}
    {% set name = (row[0] or '') | trim %}
    {% if name == '# Partition Information' %}
      {% set state.section = 'partitions' %}
    {% elif name == '# Detailed Table Information' %}
      {% set state.section = 'details' %}
    {% elif name == '# col_name' and state.section == 'partitions' %}
      {#- the header row of the partition columns -#}
    {% elif state.section != 'details' and name == '# Partitioning' %}
      {#- partition transforms (bucket, days, ...): rows 'Part 0', 'Part 1', ... -#}
      {% set state.section = 'transforms' %}
    {% elif state.section != 'details' and (name == '' or name == '# Metadata Columns') %}
      {#- sections end with an empty row; column names may start with '#' -#}
      {% set state.section = 'other' %}
    {% elif state.section == 'transforms' %}
      {% set state.transforms = state.transforms + 1 %}
    {% elif state.section == 'columns' %}
      {% do columns.append(row[0]) %}
      {% do types.update({name | lower: (row[1] or '') | trim | lower}) %}
    {% elif state.section == 'partitions' %}
      {% do partition_by.append(row[0]) %}
    {% elif state.section == 'details' %}
      {% do meta.update({name: (row[1] or '') | trim}) %}
    {% endif %}
  {% endfor %}
  {% set provider = meta.get('Provider', '') | lower %}
  {% set state.format = provider %}
  {% if provider == 'hive' %}
    {#- a Hive table: the files' format is its input format's -#}
    {% set input_format = meta.get('InputFormat', '') %}
    {% set state.format = input_format %}
    {% for name, marker in [('parquet', 'parquet'), ('orc', 'orc'), ('text', 'textinputformat'),
                            ('sequencefile', 'sequencefile'), ('avro', 'avro'), ('rcfile', 'rcfile')] %}
      {% if marker in input_format | lower and state.format == input_format %}
        {% set state.format = name %}
      {% endif %}
    {% endfor %}
  {% endif %}
  {% set format = state.format %}
  {% set write = 'merge' if provider in ['iceberg', 'delta', 'hudi']
                 else ('overwrite' if format in ['parquet', 'orc'] else none) %}
  {#- Iceberg lists its properties as '[k=v,k=v]' -#}
  {% set properties = meta.get('Table Properties', '') | replace(' ', '') %}
  {% set merge_on_read = provider == 'iceberg' and ('write.merge.mode=merge-on-read' in properties) %}
  {% set version = modules.re.search('(^|[\\[,])format-version=([0-9]+)', properties) %}
  {{ return({'provider': provider, 'format': format, 'columns': columns, 'types': types,
             'kind': meta.get('Type', '') | upper, 'partition_by': partition_by,
             'partitioned': partition_by | length > 0 or state.transforms > 0, 'write': write,
             'merge_on_read': merge_on_read,
             'format_version': (version.group(2) | int) if provider == 'iceberg' and version else none}) }}
{% endmacro %}
