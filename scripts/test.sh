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
# Two worker processes (pytest-xdist), each given whole test files (tests/whole_files.py): a
# test waits on a JVM, dbt or DuckDB most of the time and keeps about one core busy, so two of
# them share the machine's two cores. DBT_MERGE_TEST_WORKERS=0: one process, as before.
# With DBT_MERGE_THRIFT_PORT (a Thrift server of the user's), one process: two would share it.
if [ -n "${DBT_MERGE_THRIFT_PORT:-}" ]; then default_workers=0; else default_workers=2; fi
workers=${DBT_MERGE_TEST_WORKERS:-$default_workers}
parallel=()
if [ "$workers" != 0 ]; then parallel=(-n "$workers"); fi
python -m pytest -q -p no:cacheprovider --durations=40 "${parallel[@]}" "$@"
