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
# One process by default. DBT_MERGE_TEST_WORKERS=2 runs two pytest-xdist workers, each with its own
# Spark session, DuckDB file and ClickHouse engine: one runs every Spark test, the other everything
# else, each in the order of one process (tests/conftest.py, worker_group). On this project's
# 2-core machine two workers were no faster: the one process already keeps both cores busy.
python -m pytest -q -p no:cacheprovider --durations=40 \
  -n "${DBT_MERGE_TEST_WORKERS:-0}" --dist loadscope "$@"
