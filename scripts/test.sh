#!/usr/bin/env bash
# Every test, on every engine (DuckDB, Spark/Iceberg, embedded ClickHouse), after set-up and lint.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
source scripts/env.sh
ruff check adapter tests benchmarks scripts
python -m pytest -q -p no:cacheprovider --durations=40 "$@"
