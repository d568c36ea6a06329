{#-
  Before the merge's transaction begins, merge_history_table must exist, so that the merges
  sharing it only append to it (record_merge_history). DuckDB refuses two open transactions that
  both create the table (`Catalog write-write conflict`, on first use under --threads), so there
  the table is created by a dbt-duckdb Python job, on a cursor of its own, one thread at a time
  (dbt_merge.duckdb.history). Returns that job's code, which the materialization runs (dbt
  allows statement(language='python') only there), or none: the table is known to exist, or
  the engine (Spark) creates it when the row is written.
-#}
{% macro merge_history_job(name, target) %}
  {{ return(adapter.dispatch('merge_history_job', 'dbt_merge')(name, target)) }}
{% endmacro %}

{% macro default__merge_history_job(name, target) %}
  {{ return(none) }}
{% endmacro %}

{% macro duckdb__merge_history_job(name, target) %}
  {% set relation = dbt_merge._history_relation(name, target) %}
  {#- a history merge (strategy='history') writes column `versions`, which tables made by
      releases before it lack: added here too, not in the merges' transactions (two would
      conflict on the ALTER, as on the CREATE) -#}
  {% set versions = config.get('strategy') == 'history' %}
  {% if load_cached_relation(relation) is not none and not versions %}
    {{ return(none) }}
  {% endif %}
  {#- dbt-duckdb runs model(dbt, session), then materialize(df, cursor) on a new cursor -#}
  {% set code %}
from dbt_merge.duckdb.history import create_table
from dbt_merge.version import check_dbt_package


class dbtObj:
    def __init__(self, load_df_function):
        pass


def model(dbt, session):
    return None


def materialize(df, con):
    check_dbt_package({{ tojson(dbt_merge.package_version()) }})
    create_table(con, {{ tojson(dbt_merge._create_history_sql(relation)) }}{% if versions %},
                 {{ tojson(dbt_merge._history_add_versions_sql(relation)) }}{% endif %})
  {% endset %}
  {{ return({'code': code, 'relation': relation}) }}
{% endmacro %}
