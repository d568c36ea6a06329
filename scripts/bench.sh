#!/usr/bin/env bash
# Benchmark the merge materialization (see BENCHMARKS.md). Not part of the tests.
#   bash scripts/bench.sh                      # everything, full sizes (~25 min on 2 cores)
#   bash scripts/bench.sh --engine duckdb --quick
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck disable=SC1091
source scripts/env.sh
exec python -m benchmarks.merge_bench "$@"
