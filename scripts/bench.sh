#!/usr/bin/env bash
# Benchmark the merge materialization (see BENCHMARKS.md) and the merge into Parquet datasets
# (benchmarks/parquet_bench.py). Not part of the tests.
#   bash scripts/bench.sh                      # everything, full sizes: DuckDB, Spark local[2]
#                                              # (session), Spark cluster (thrift), Parquet
#   bash scripts/bench.sh --engine duckdb --quick
#   bash scripts/bench.sh --engine spark_thrift --scale 20 --reps 1   # starts and stops its own
#                                              # cluster (.state/bench_cluster, ports 7177/10100)
#   bash scripts/bench.sh --engine duckdb --workloads snapshot,cdc --scale 100
#   bash scripts/bench.sh --profile --quick    # dbt's cost per statement, our upsert's statements
#   bash scripts/bench.sh --profile --engine spark --scale 10   # Spark jobs per statement
#   bash scripts/bench.sh --engine parquet --quick
# With --engine spark (or all, and no --workloads/--profile/...), also merge_dataframe next to a
# hand-written MERGE INTO from the same DataFrame and the dbt model of the same merge
# (benchmarks/floor.py --dataframe, a 200k-row increment into a 2M-row Iceberg table).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck disable=SC1091
source scripts/env.sh
engine=all
args=()
while (($#)); do
  case "$1" in
    --engine) engine="$2"; shift 2 ;;
    --engine=*) engine="${1#*=}"; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ "$engine" != parquet ]; then
  python -m benchmarks.merge_bench --engine "$engine" ${args[@]+"${args[@]}"}
fi
# the Parquet-dataset benchmark takes --quick and --reps only
merge_only=0
for a in ${args[@]+"${args[@]}"}; do
  case "$a" in --profile|--workloads*|--scale*|--strategies*|--package-dir*) merge_only=1 ;; esac
done
if { [ "$engine" = spark ] || [ "$engine" = all ]; } && [ "$merge_only" = 0 ]; then
  size=(--reps 3)
  for a in ${args[@]+"${args[@]}"}; do
    [ "$a" = --quick ] && size=(--reps 1 --target 200000 --rows 20000)
  done
  python -m benchmarks.floor --engine spark --only MERGE --dataframe "${size[@]}"
fi
if [ "$engine" = parquet ] || { [ "$engine" = all ] && [ "$merge_only" = 0 ]; }; then
  python -m benchmarks.parquet_bench ${args[@]+"${args[@]}"}
fi
