#!/usr/bin/env bash
# The demo on the embedded default (DuckDB): a set-up of its own with only what the demo needs,
# then the integration project, a first load and the increment (scripts/demo.py).
#
# The set-up installs this package with its `duckdb` extra (dbt-core, dbt-duckdb, DuckDB; no
# Java, Spark, ClickHouse or benchmark libraries) into a virtualenv of its own,
# .state/demo-venv, once (again only when pyproject.toml changes). When `make test` has set up
# .venv (every test dependency, a superset), the demo runs there instead of making a second one.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -f .venv/.dbt_merge_installed ]; then
  venv=.venv
else
  venv=.state/demo-venv
  if [ ! -x "$venv/bin/python" ]; then
    mkdir -p .state
    "${PYTHON:-python3}" -m venv "$venv"
  fi
  stamp=$venv/.dbt_merge_installed
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "demo: installing the package with DuckDB and dbt-duckdb into $venv" >&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -e ".[duckdb]"
    touch "$stamp"
  fi
fi
export DBT_MERGE_DUCKDB_PATH="${DBT_MERGE_DUCKDB_PATH:-$PWD/.state/demo.duckdb}"
mkdir -p "$(dirname "$DBT_MERGE_DUCKDB_PATH")"
exec "$venv/bin/python" scripts/demo.py
