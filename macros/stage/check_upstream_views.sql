{#-
  Refuse a SELECT that reads a view whose definition Spark may read stale, before the SELECT is
  staged or anything is written (run_merge calls this first).

  Spark: with Iceberg's SparkSessionCatalog over a Hive metastore and Iceberg's SQL extensions
  (the documented profile), `create or replace view` makes an Iceberg view, registered in the
  metastore as a table of type ICEBERG-VIEW whose Hive view text is the SQL the view was first
  created with. Replacing the view writes a new Iceberg version of it and leaves that text as it
  was (Iceberg 1.10's HiveViewOperations writes the text only when it creates the view), and
  Spark 3.5 reads a view of its session catalog from that text: the view keeps its first
  definition for every reader, in this session and the next, whatever `refresh table` or the
  catalog's `cache-enabled` says. A dbt `view` model replaced daily (`where day = {{ var('day') }}`)
  then serves its first day forever, and a merge from it reports 0 changes.

  Spark prints the views a query reads in its analyzed plan (`View (`spark_catalog`.`db`.`v`, ...)`,
  nested views too); one EXPLAIN (no Spark job) lists them. A view of the session catalog whose
  metastore properties say ICEBERG-VIEW and name a previous metadata file has been replaced since
  it was created, so the text Spark reads may be older than its SQL: refused (a view replaced with
  its own SQL again is refused too, as nothing in SQL tells the two apart). A view made once and
  never replaced, a Hive view, a temporary view and a view of another catalog (which Iceberg
  reads at its current version) pass. The fix is to drop the view and create it again, which
  writes its text anew, and to have dbt do so whenever it replaces one: spark_create_view_as.
-#}
{% macro check_upstream_views(sql) %}
  {{ return(adapter.dispatch('check_upstream_views', 'dbt_merge')(sql)) }}
{% endmacro %}

{% macro default__check_upstream_views(sql) %}
{% endmacro %}

{% macro spark__check_upstream_views(sql) %}
  {% set stale = [] %}
  {% for view in dbt_merge._views_read(sql) if dbt_merge._replaced_iceberg_view(view) %}
    {#- named as a user writes it: `spark_catalog`.`analytics`.`v` is analytics.v -#}
    {% set name = view[('`spark_catalog`.' | length):] %}
    {% do stale.append(name | replace('`', '') if modules.re.fullmatch('`\\w+`(\\.`\\w+`)*', name) else name) %}
  {% endfor %}
  {% if stale %}
    {{ dbt_merge.raise_merge_error(
        "the model's SELECT reads " ~ stale | join(', ') ~ ", " ~ ("an Iceberg view" if stale | length == 1 else "Iceberg views")
        ~ " replaced (create or replace view) since " ~ ("it was" if stale | length == 1 else "they were")
        ~ " created. Spark reads a view of this catalog from the Hive metastore's view text, which Iceberg"
        ~ " writes only when it creates the view: the merge would read the first definition, not the SQL"
        ~ " the view has now. Drop the view and create it again (drop view " ~ stale[0] ~ ", then run its"
        ~ " model), and have dbt drop an Iceberg view before replacing it: add the one-line macro"
        ~ " spark__create_view_as to your project's macros (docs/spark.md, Views on an Iceberg session"
        ~ " catalog). The target was not changed.") }}
  {% endif %}
{% endmacro %}

{#- The persistent views of the session catalog that `sql` reads, directly or through other
    views, as Spark quotes them (`spark_catalog`.`db`.`v`), each once; none when Spark cannot
    analyze `sql` (EXPLAIN returns the error as text; staging the SELECT then fails with it). -#}
{% macro _views_read(sql) %}
  {% set text = dbt_merge.run_sql('explain extended ' ~ sql, 'dbt_merge_views').rows | map(attribute=0) | join('\n') %}
  {% set analyzed = text.split('== Analyzed Logical Plan ==')[1].split('== Optimized Logical Plan ==')[0]
                    if '== Analyzed Logical Plan ==' in text and '== Optimized Logical Plan ==' in text else '' %}
  {% set part = '`(?:[^`]|``)+`' %}
  {% set views = [] %}
  {% for line in analyzed.split('\n') %}
    {% set found = modules.re.match('^[\\s:|+-]*View \\((' ~ part ~ '(?:\\.' ~ part ~ ')*), \\[', line) %}
    {% if found and found.group(1).startswith('`spark_catalog`.') and found.group(1) not in views %}
      {% do views.append(found.group(1)) %}
    {% endif %}
  {% endfor %}
  {{ return(views) }}
{% endmacro %}

{#- Whether the metastore registers `view` as an Iceberg view that was replaced after it was
    created (its properties name a previous metadata file). -#}
{% macro _replaced_iceberg_view(view) %}
  {% set properties = dbt_merge._view_properties(view) %}
  {{ return(properties.get('table_type', '') | upper == 'ICEBERG-VIEW'
            and 'previous_metadata_location' in properties) }}
{% endmacro %}

{#- The properties the metastore holds for `view` ({name in lower case: value}). -#}
{% macro _view_properties(view) %}
  {% set properties = {} %}
  {% for row in dbt_merge.run_sql('show tblproperties ' ~ view, 'dbt_merge_views').rows %}
    {% do properties.update({row[0] | string | lower: row[1] | string}) %}
  {% endfor %}
  {{ return(properties) }}
{% endmacro %}
