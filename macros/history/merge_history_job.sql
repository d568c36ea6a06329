{#-
  Before the merge's transaction begins, merge_history_table must exist, so that the merges
  sharing it only append to it (record_merge_history). DuckDB refuses two open transactions that
  both create the table (`Catalog write-write conflict`, on first use under --threads), so there
  the table is created by a dbt-duckdb Python job, on a cursor of its own, one thread at a time
  (dbt_merge.duckdb.history), which first checks the table (create=false, a dry run: only that): one the row cannot go to (a view, a
  table lacking a history column, a read-only database) is refused before anything is written.
  Returns that job's code, which the materialization runs (dbt allows
  statement(language='python') only there), or none: the engine (Spark) checks the table in the
  flow (check_history_table) and creates it when the row is written.
-#}
{% macro merge_history_job(name, target, create=true) %}
  {{ return(adapter.dispatch('merge_history_job', 'dbt_merge')(name, target, create)) }}
{% endmacro %}

{% macro default__merge_history_job(name, target, create=true) %}
  {{ return(none) }}
{% endmacro %}

{% macro duckdb__merge_history_job(name, target, create=true) %}
  {% set relation = dbt_merge.merge_history_relation(name, target) %}
  {#- a history merge (strategy='history') writes column `versions`, which tables made by
      releases before it lack: added here too, not in the merges' transactions (two would
      conflict on the ALTER, as on the CREATE) -#}
  {#- run on every run: the table is checked (a view, a table lacking a history column, ...:
      refused before anything is written, dbt_merge.duckdb.history.check) -#}
  {% set versions = config.get('strategy') == 'history' %}
  {#- dbt-duckdb runs model(dbt, session), then materialize(df, cursor) on a new cursor -#}
  {% set code %}
from types import SimpleNamespace

from dbt_merge.duckdb.history import create_table, refuse_unusable
from dbt_merge.errors import MergeError
from dbt_merge.version import check_dbt_package


class dbtObj:
    def __init__(self, load_df_function):
        pass


def model(dbt, session):
    return None


def materialize(df, con):
    check_dbt_package({{ tojson(dbt_merge.package_version()) }})
    refuse_unusable(con, SimpleNamespace(database={{ tojson(relation.database) }},
                                         schema={{ tojson(relation.schema) }},
                                         identifier={{ tojson(relation.identifier) }}),
                    {{ tojson(name) }}, {{ tojson(dbt_merge.merge_history_columns() | map('first') | list) }},
                    {{ tojson(dbt_merge.merge_error_prefix()) }}, MergeError)
{%- if create %}
    create_table(con, {{ tojson(dbt_merge.create_merge_history_sql(relation)) }}{% if versions %},
                 {{ tojson(dbt_merge.merge_history_add_versions_sql(relation)) }}{% endif %})
{%- endif %}
  {% endset %}
  {{ return({'code': code, 'relation': relation}) }}
{% endmacro %}
