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
python -m pytest -q -p no:cacheprovider --durations=40 "$@"
