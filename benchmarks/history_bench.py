"""Benchmark strategy='history' against `dbt snapshot` with the same config, on DuckDB and Spark
(Iceberg, dbt-spark's session method in this process, local[2]).

A dimension of N rows (id, name, region, amount, updated_at) has a history table built from it
once (every row its key's first version, as both a snapshot's and the model's first run write
it), kept as a pristine copy. Each measurement restores the history table from that copy
(untimed), writes the workload's source (untimed), then runs one method, timed by dbt's own
timing of the node's execute phase (its first statement to its commit, no parsing or start-up),
as benchmarks/merge_bench.py times models:

    daily_snapshot  the whole dimension again, 1% of the rows changed (a newer updated_at)
    increment       10% of the dimension's size: half changed rows, half new keys

Methods: `ours` (a merge model, strategy='history') and `dbt_snapshot` (a snapshot), both with
unique_key='id', updated_at='updated_at' (dbt's timestamp strategy) and --hard-deletes (default
ignore); on DuckDB also `ours_dataset`, the same model with a `location` (a Parquet dataset of
1M-row files its first run wrote, restored by hard links). After each run the targets' row
counts must agree (versions and current versions), else the row says so. Defaults are the
issue's sizes: 10M rows on DuckDB, 2M on Spark.

    python -m benchmarks.history_bench --engine duckdb                 # 10M rows, 3 repetitions
    python -m benchmarks.history_bench --engine spark                  # 2M rows
    python -m benchmarks.history_bench --engine duckdb --rows 20000 --reps 1   # a smoke run
    python -m benchmarks.history_bench --engine spark --hard-deletes invalidate

Writes results.json and results.md to --out (default .state/history_bench/<engine>).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import yaml

from .project import REPO, SPARK_CONF, execute_seconds

DEFAULT_ROWS = {"duckdb": 10_000_000, "spark": 2_000_000}
WORKLOADS = ("daily_snapshot", "increment")
METHODS = ("ours", "dbt_snapshot")
#: DuckDB also merges the history into a Parquet dataset (a location model)
ENGINE_METHODS = {"duckdb": (*METHODS, "ours_dataset"), "spark": METHODS}

#: dbt-spark's snapshot reads `show table extended`, which calls an Iceberg table of Spark's
#: session catalog `Provider: hive`, and refuses its own table on the second run; the project
#: tells it from `describe table extended` (this file; tests/flow/test_history_dbt.py too).
SNAPSHOT_ICEBERG = Path(__file__).with_name("snapshot_iceberg.sql")


def write_project(root: Path, engine: str, hard_deletes: str) -> None:
    schema = "main" if engine == "duckdb" else "bench"
    (root / "models").mkdir(parents=True, exist_ok=True)
    (root / "snapshots").mkdir(exist_ok=True)
    (root / "macros").mkdir(exist_ok=True)
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump(
            {
                "name": "history_bench",
                "version": "0.1.0",
                "config-version": 2,
                "profile": "history_bench",
                "model-paths": ["models"],
                "snapshot-paths": ["snapshots"],
            }
        )
    )
    (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(REPO)}]}))
    outputs = {
        "duckdb": {
            "type": "duckdb",
            "path": str(root / "bench.duckdb"),
            "schema": schema,
            "threads": 1,
        },
        "spark": {
            "type": "spark",
            "method": "session",
            "host": "NA",
            "schema": schema,
            "threads": 1,
            "server_side_parameters": SPARK_CONF,
        },
    }
    (root / "profiles.yml").write_text(
        yaml.safe_dump({"history_bench": {"target": engine, "outputs": {engine: outputs[engine]}}})
    )
    extra = {"file_format": "iceberg"} if engine == "spark" else {}
    config = {
        "unique_key": "id",
        "updated_at": "updated_at",
        "hard_deletes": hard_deletes,
        "max_delete_fraction": 1,
        **extra,
    }
    args = ", ".join(f"{k}={v!r}" for k, v in config.items())
    (root / "models" / "h_ours.sql").write_text(
        "{{ config(materialized='merge', strategy='history', " + args + ") }}\n"
        f"select * from {schema}.bench_src\n"
    )
    if engine == "duckdb":
        (root / "models" / "h_lake.sql").write_text(
            "{{ config(materialized='merge', strategy='history', " + args
            + f", location={str(root / 'lake')!r}) }}}}\n"
            f"select * from {schema}.bench_src\n"
        )
    (root / "models" / "sources.yml").write_text(
        yaml.safe_dump(
            {
                "version": 2,
                "sources": [{"name": "bench", "schema": schema, "tables": [{"name": "bench_src"}]}],
            }
        )
    )
    snap = {k: v for k, v in config.items() if k != "max_delete_fraction"}
    (root / "snapshots" / "h_snap.yml").write_text(
        yaml.safe_dump(
            {
                "snapshots": [
                    {
                        "name": "h_snap",
                        "relation": "source('bench', 'bench_src')",
                        "config": {"strategy": "timestamp", "schema": schema, **snap},
                    }
                ]
            }
        )
    )
    if engine == "spark":
        (root / "macros" / "snapshot_iceberg.sql").write_text(SNAPSHOT_ICEBERG.read_text())
    # a snapshot's schema is <target schema>_<schema> unless told otherwise
    (root / "macros" / "schema_name.sql").write_text(
        "{% macro generate_schema_name(custom_schema_name, node) -%}"
        "{{ custom_schema_name if custom_schema_name else target.schema }}{%- endmacro %}\n"
    )


class Sql:
    """Plain SQL on the engine, outside dbt (the same database dbt writes)."""

    def __init__(self, engine: str, root: Path):
        self.engine = engine
        if engine == "duckdb":
            import duckdb

            self.con = duckdb.connect(str(root / "bench.duckdb"))
        else:
            from dbt_merge.spark.profile import get_spark_session

            conf = {
                k: v.replace("{{ env_var('ICEBERG_JAR') }}", os.environ["ICEBERG_JAR"]).replace(
                    "{{ env_var('SPARK_STATE_DIR') }}", os.environ["SPARK_STATE_DIR"]
                )
                for k, v in SPARK_CONF.items()
            }
            self.spark = get_spark_session(conf)
            self.spark.sparkContext.setLogLevel("ERROR")
            self.spark.sql("create database if not exists bench")

    def run(self, sql: str) -> list[tuple]:
        if self.engine == "duckdb":
            return self.con.execute(sql).fetchall()
        return [tuple(r) for r in self.spark.sql(sql).collect()]

    @property
    def schema(self) -> str:
        return "main" if self.engine == "duckdb" else "bench"

    def table(self, name: str, select: str) -> None:
        using = " using iceberg" if self.engine == "spark" else ""
        self.run(f"create or replace table {self.schema}.{name}{using} as {select}")

    def rand(self, salt: int) -> str:
        """A number in [0, 1) from the row's id, the same on every run and engine."""
        return f"(abs(hash(id * 7919 + {salt})) % 1000000) / 1000000.0"


def dimension_sql(sql: Sql, rows: int) -> str:
    rng = f"range({rows})" if sql.engine == "spark" else f"range({rows}) as r(id)"
    return (
        f"select cast(id as bigint) as id, concat('name ', cast(id as string)) as name, "
        f"concat('region ', cast(id % 50 as string)) as region, cast(id % 1000 as double) "
        f"as amount, cast(timestamp '2024-01-01 00:00:00' as timestamp) as updated_at from {rng}"
    )


def workload_sql(sql: Sql, workload: str, rows: int) -> str:
    s = sql.schema
    changed = (
        f"case when {sql.rand(1)} < 0.01 then amount + 1 else amount end as amount, "
        f"case when {sql.rand(1)} < 0.01 then timestamp '2024-01-02 00:00:00' "
        f"else updated_at end as updated_at"
    )
    if workload == "daily_snapshot":
        return f"select id, name, region, {changed} from {s}.bench_dim"
    # increment: 5% of the rows changed, 5% new keys
    return (
        f"select id, name, region, amount + 1 as amount, timestamp '2024-01-02 00:00:00' as "
        f"updated_at from {s}.bench_dim where {sql.rand(2)} < 0.05 union all "
        f"select id + {rows} as id, name, region, amount, timestamp '2024-01-02 00:00:00' as "
        f"updated_at from {s}.bench_dim where {sql.rand(3)} < 0.05"
    )


def history_sql(sql: Sql, hard_deletes: str = "ignore") -> str:
    """The history table both first runs write: every row its key's first version (with
    new_record, dbt_is_deleted 'False', as both write it)."""
    deleted = ", 'False' as dbt_is_deleted" if hard_deletes == "new_record" else ""
    return (
        f"select *, md5(coalesce(cast(id as string), '') || '|' || coalesce(cast(updated_at "
        f"as string), '')) as dbt_scd_id, updated_at as dbt_updated_at, updated_at as "
        f"dbt_valid_from, cast(null as timestamp) as dbt_valid_to{deleted} from "
        f"{sql.schema}.bench_dim"
    )


def invoke(root: Path, engine: str, args: list[str]):
    from dbt.cli.main import dbtRunner

    res = dbtRunner().invoke(
        [
            *args,
            "--project-dir",
            str(root),
            "--profiles-dir",
            str(root),
            "--target",
            engine,
            "--quiet",
        ]
    )
    results = list(getattr(res.result, "results", None) or [])
    if not results or str(results[0].status) != "success":
        raise RuntimeError(
            f"dbt {' '.join(args)}: {results[0].message if results else res.exception}"
        )
    r = results[0]
    return execute_seconds(r), (r.adapter_response or {}).get("_message") or ""


def measure(engine: str, rows: int, reps: int, hard_deletes: str, out: Path, log=print) -> dict:
    root = out / "project"
    write_project(root, engine, hard_deletes)
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    if engine == "spark":
        os.environ.setdefault("SPARK_STATE_DIR", str(out / "spark"))
        Path(os.environ["SPARK_STATE_DIR"]).mkdir(parents=True, exist_ok=True)
    from dbt.cli.main import dbtRunner

    dbtRunner().invoke(["deps", "--project-dir", str(root), "--profiles-dir", str(root), "--quiet"])
    sql = Sql(engine, root)
    log(f"{engine}: building a {rows:,}-row dimension and its history")
    sql.table("bench_dim", dimension_sql(sql, rows))
    sql.table("bench_pristine", history_sql(sql, hard_deletes))
    targets = {"ours": "h_ours", "dbt_snapshot": "h_snap"}
    methods = ENGINE_METHODS[engine]
    lake, pristine_lake = root / "lake", root / "lake_pristine"
    # first runs create the relations dbt knows (then replaced by the pristine history); the
    # dataset's first run writes its pristine files
    sql.table("bench_src", f"select * from {sql.schema}.bench_dim")
    invoke(root, engine, ["run", "--select", "h_ours"])
    invoke(root, engine, ["snapshot", "--select", "h_snap"])
    if "ours_dataset" in methods:
        shutil.rmtree(lake, ignore_errors=True)
        shutil.rmtree(pristine_lake, ignore_errors=True)
        invoke(root, engine, ["run", "--select", "h_lake"])
        os.rename(lake, pristine_lake)
    results: dict = {
        "engine": engine,
        "rows": rows,
        "reps": reps,
        "hard_deletes": hard_deletes,
        "workloads": {},
    }
    for workload in WORKLOADS:
        sql.table("bench_src", workload_sql(sql, workload, rows))
        times: dict[str, list[float]] = {m: [] for m in methods}
        counts: dict[str, tuple] = {}
        message = ""
        for _ in range(reps):
            for method in methods:
                if method == "ours_dataset":
                    shutil.rmtree(lake, ignore_errors=True)
                    shutil.rmtree(root / ".lake.dbt_merge", ignore_errors=True)
                    shutil.copytree(pristine_lake, lake, copy_function=os.link)
                    target = f"read_parquet('{lake}/**/*.parquet')"
                    args = ["run", "--select", "h_lake"]
                else:
                    target = f"{sql.schema}.{targets[method]}"
                    sql.run(
                        f"delete from {target}" if engine == "duckdb"
                        else f"truncate table {target}"
                    )
                    sql.run(f"insert into {target} select * from {sql.schema}.bench_pristine")
                    args = (
                        ["run", "--select", "h_ours"]
                        if method == "ours"
                        else ["snapshot", "--select", "h_snap"]
                    )
                seconds, said = invoke(root, engine, args)
                times[method].append(seconds)
                message = said if method == "ours" else message
                counts[method] = tuple(sql.run(
                    f"select count(*), count(case when dbt_valid_to is null "
                    f"then 1 end) from {target}"
                )[0])
        median = {m: statistics.median(t) for m, t in times.items()}
        results["workloads"][workload] = {
            "seconds": times,
            "median": median,
            "ratio": median["ours"] / median["dbt_snapshot"],
            "same_counts": len(set(counts.values())) == 1,
            "counts": counts,
            "ours_message": message,
        }
        if "ours_dataset" in median:
            results["workloads"][workload]["dataset_ratio"] = (
                median["ours_dataset"] / median["dbt_snapshot"]
            )
        log(
            f"{engine} {workload}: ours {median['ours']:.2f} s, dbt snapshot "
            f"{median['dbt_snapshot']:.2f} s ({median['ours'] / median['dbt_snapshot']:.2f}x); "
            f"rows {counts}; {message}"
        )
    return results


def markdown(results: dict) -> str:
    lines = [
        f"{results['engine']}, {results['rows']:,} rows, hard_deletes="
        f"{results['hard_deletes']}, median of {results['reps']} (seconds of the execute "
        "phase)",
        "",
        "| workload | ours | dbt snapshot | ours / dbt | ours, Parquet dataset | dataset / dbt "
        "| same rows |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, w in results["workloads"].items():
        dataset = w["median"].get("ours_dataset")
        shown = ("-", "-") if dataset is None else (f"{dataset:.2f}", f"{w['dataset_ratio']:.2f}x")
        lines.append(
            f"| {name} | {w['median']['ours']:.2f} | {w['median']['dbt_snapshot']:.2f} "
            f"| {w['ratio']:.2f}x | {shown[0]} | {shown[1]} "
            f"| {'yes' if w['same_counts'] else 'NO ' + str(w['counts'])} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=sorted(DEFAULT_ROWS), default="duckdb")
    parser.add_argument(
        "--rows", type=int, help="the dimension's rows (default: 10M DuckDB, 2M Spark)"
    )
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--hard-deletes", default="ignore", choices=["ignore", "invalidate", "new_record"]
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    out = args.out or REPO / ".state" / "history_bench" / args.engine
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    results = measure(
        args.engine, args.rows or DEFAULT_ROWS[args.engine], args.reps, args.hard_deletes, out
    )
    results["wall_seconds"] = round(time.time() - started, 1)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    (out / "results.md").write_text(markdown(results))
    print(markdown(results))
    return 0 if all(w["same_counts"] for w in results["workloads"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
