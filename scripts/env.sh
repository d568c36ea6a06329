# Sourced by the other scripts: the virtualenv and the variables the dbt profiles read.
_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
. "$_root/.venv/bin/activate"
ICEBERG_JAR="${ICEBERG_JAR:-$(python -c 'import snowpark_connect_deps_iceberg as m; print(m.get_jar_path("iceberg-spark-runtime-3.5_2.12-1.10.2.jar"))')}"
export ICEBERG_JAR
export SPARK_STATE_DIR="${SPARK_STATE_DIR:-$_root/.state/spark}"
export DBT_MERGE_DUCKDB_PATH="${DBT_MERGE_DUCKDB_PATH:-$_root/.state/integration_tests.duckdb}"
export DBT_PROFILES_DIR="${DBT_PROFILES_DIR:-$_root/integration_tests}"
mkdir -p "$SPARK_STATE_DIR" "$(dirname "$DBT_MERGE_DUCKDB_PATH")"
unset _root
