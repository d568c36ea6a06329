#!/usr/bin/env bash
# The demo on the embedded default (DuckDB): set-up, then the integration project twice.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export DBT_MERGE_DUCKDB_PATH="${DBT_MERGE_DUCKDB_PATH:-$PWD/.state/demo.duckdb}"
# shellcheck disable=SC1091
source scripts/env.sh
python scripts/demo.py
