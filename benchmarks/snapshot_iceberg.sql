{#- dbt-spark's snapshot materialization refuses its own table on every run after the first when
    the catalog is Spark's session catalog over a Hive metastore: `show table extended` says
    `Provider: hive` for an Iceberg table there, so the relation dbt-spark caches is not
    `is_iceberg` ("The existing table ... is in another format than 'delta' or 'iceberg' or
    'hudi'"). A project that runs `dbt snapshot` there (the history benchmark, the tests comparing
    history models with snapshots) tells it from `describe table extended`, which says iceberg. -#}
{% macro spark__get_or_create_relation(database, schema, identifier, type) %}
  {% set found = adapter.get_relation(database=database, schema=schema, identifier=identifier) %}
  {% if found is none %}
    {% set new = api.Relation.create(database=database, schema=schema, identifier=identifier,
                                     type=type) %}
    {{ return((false, new)) }}
  {% endif %}
  {% if execute and not found.is_iceberg %}
    {% for row in run_query("describe table extended " ~ found).rows
        if (row[0] or '') | trim == 'Provider' and (row[1] or '') | trim | lower == 'iceberg' %}
      {% set found = found.incorporate(is_iceberg=true) %}
      {{ return((true, found)) }}
    {% endfor %}
  {% endif %}
  {{ return((true, found)) }}
{% endmacro %}
