#!/usr/bin/env bash
# Every test, on every engine (DuckDB, Spark/Iceberg, embedded ClickHouse), after set-up, lint
# and the strict build of the documentation site (a few seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
source scripts/env.sh
ruff check adapter tests benchmarks scripts
docs_site=$(mktemp -d)
bash scripts/docs.sh "$docs_site"
rm -rf "$docs_site"
# Two workers (pytest-xdist), each with its own Spark session, DuckDB file and ClickHouse engine;
# one runs every Spark test, the other everything else, each in the order of one process
# (tests/conftest.py, worker_group). DBT_MERGE_TEST_WORKERS=0 runs them in this process.
python -m pytest -q -p no:cacheprovider --durations=40 \
  -n "${DBT_MERGE_TEST_WORKERS:-2}" --dist loadscope "$@"
