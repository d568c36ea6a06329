{#-
  dbt's cache of the schema says the model's table does not exist: make sure, where the cache can
  be wrong, before the materialization builds the table anew (CREATE OR REPLACE would drop every
  row the table holds, and a history table's versions) and before the checks that read the cache.
  A table found is added to dbt's cache, so that load_cached_relation finds it from then on.

  Spark: dbt-spark fills its cache with one `show table extended in <schema> like '*'`, which also
  lists the session's temporary views and describes each; a temporary view that another thread of
  the session drops in between (a merge_dataframe call, another dbt invocation, a Thrift client of
  a shared session) fails the listing with TABLE_OR_VIEW_NOT_FOUND, which dbt-spark takes for an
  empty schema: every model of the schema would then be built anew, its rows gone, success
  reported (red team of 2026-11-29: a merge model's 8 rows replaced by the run's 2). One
  `show table extended` of the model's own name asks again; it runs only when the cache has no
  table of that name (a first build, or such a miss), never in the steady state.
-#}
{% macro confirm_relation_cache(relation) %}
  {% if load_cached_relation(relation) is none %}
    {% set found = adapter.dispatch('find_relation', 'dbt_merge')(relation) %}
    {% if found is not none %}
      {% do adapter.cache_added(found) %}
    {% endif %}
  {% endif %}
{% endmacro %}

{% macro default__find_relation(relation) %}
  {{ return(none) }}
{% endmacro %}

{#- Spark's LIKE pattern is a regular expression split on `|`, with `*` for any characters: every
    character but letters, digits and `_` is asked as `*`, and the name matched exactly after.
    SHOW TABLES, not SHOW TABLE EXTENDED (which a v2 catalog refuses); a name found is asked
    among the views too (a v2 catalog lists views only there). -#}
{% macro spark__find_relation(relation) %}
  {% set pattern = modules.re.sub('[^A-Za-z0-9_]', '*', relation.identifier) %}
  {% set schema = dbt_merge.quote_identifier(relation.schema) %}
  {% set kinds = [] %}
  {% for listing in ['tables', 'views'] if listing == 'tables' or kinds %}
    {% set rows = dbt_merge.run_sql('show ' ~ listing ~ ' in ' ~ schema ~ " like '" ~ pattern ~ "'",
                                    'dbt_merge_find_relation').rows %}
    {% for row in rows if (row[1] | string | lower) == (relation.identifier | lower) and not row[2] %}
      {% do kinds.append(listing) %}
    {% endfor %}
  {% endfor %}
  {% if not kinds %}
    {{ return(none) }}
  {% endif %}
  {{ return(relation.incorporate(type='view' if 'views' in kinds else 'table')) }}
{% endmacro %}
