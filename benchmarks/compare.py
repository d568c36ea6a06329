"""Paired before/after of a change to the package: two versions of dbt_merge, each in its own dbt
project, on the same data in one process, their runs alternating (base first, then head first,
and so on). Ratios between full benchmark runs move by 0.1-0.3x as this machine's speed drifts;
a paired comparison does not.

    python -m benchmarks.compare --base 7ddc2cb                       # DuckDB, every strategy
    python -m benchmarks.compare --base 7ddc2cb --engine spark --strategies upsert,insert
    python -m benchmarks.compare --base /tmp/old_checkout --quick     # a folder works too
    python -m benchmarks.compare --base 7ddc2cb --data snapshot,100k --strategies upsert,insert
    python -m benchmarks.compare --base f10acea --engine spark --data snapshot --strategies \
        upsert,full_merge_guarded --mor                  # merge-on-read Iceberg targets
    python -m benchmarks.compare --base f10acea --engine spark_thrift --data snapshot,200k

`--base` is a git revision of this repository (exported with `git archive`) or a folder holding
the package; the head is this checkout. On Spark, `--mor` makes every target a merge-on-read
Iceberg table, and `spark_thrift` runs both versions through the benchmark's own cluster
(benchmarks/engines.py). A strategy is a model name without its `ours_` prefix, so
`full_merge_guarded` is full_merge under the default mass-delete guard. Times are dbt's timing
of the model's execute phase, as in merge_bench; one untimed run of each version first. A
version whose statistics differ from the other's is flagged: a speed-up that changes the result
is a bug.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from . import data
from .engines import mark_keys_verified, open_engine, prepare
from .project import REPO, STRATEGIES, TABLE_KINDS, THRIFT_PORT_ENV, DbtProject, write_project

SIZES = {
    "duckdb": [data.Increment(10_000_000, 10_000), data.Increment(10_000_000, 1_000_000)],
    "spark": [data.Increment(2_000_000, 200_000)],
    "spark_thrift": [data.Increment(2_000_000, 200_000)],
}
#: `--data`: other sources by name (DuckDB sizes; Spark's target is 2M rows).
DATA = {
    "10k": lambda t: data.Increment(t, t // 1000),
    "100k": lambda t: data.Increment(t, t // 100),
    "1m": lambda t: data.Increment(t, t // 10),
    "unchanged": lambda t: data.Increment(t, t // 10, unchanged=0.1),
    "snapshot": lambda t: data.Increment(t, t, shape="snapshot"),
    "200k": lambda t: data.Increment(t, 200_000 * t // 2_000_000),
    "changed": lambda t: data.Increment(t, t, shape="changed"),
    "1k": lambda t: data.Increment(t, 1_000),
    "1k_recent": lambda t: data.Increment(t, 1_000, shape="recent"),
    "empty": lambda t: data.Increment(t, 0, shape="empty"),
}


def export(base: str, into: Path) -> Path:
    """The package at `base`: a folder as it is, or a git revision exported to `into`."""
    if Path(base).is_dir():
        return Path(base).resolve()
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", base], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="git revision or package folder")
    parser.add_argument("--engine", choices=["duckdb", "spark", "spark_thrift"], default="duckdb")
    parser.add_argument("--mor", action="store_true", help="Spark: merge-on-read Iceberg targets")
    parser.add_argument("--v3", action="store_true", help="Spark: Iceberg targets of format 3")
    parser.add_argument(
        "--verified", action="store_true",
        help="Spark: each restored target marked as the snapshot this package published last "
        "(dbt_merge.keys-verified), as a table it merged before and nobody else wrote since",
    )
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--reps", type=int, help="timed runs per version (7 DuckDB, 4 Spark)")
    parser.add_argument("--quick", action="store_true", help="1/10 of the sizes, 2 runs")
    parser.add_argument(
        "--data",
        help="comma-separated sources instead of the default ones: " + ", ".join(DATA),
    )
    args = parser.parse_args(argv)
    if args.engine != "spark_thrift":
        return _compare(args)
    from .engines import bench_cluster

    with bench_cluster(log=lambda m: print(m, file=sys.stderr, flush=True)) as (cluster, _):
        os.environ[THRIFT_PORT_ENV] = str(cluster.thrift_port)
        return _compare(args, cluster)


def _compare(args, cluster=None) -> int:
    engine_name = args.engine
    strategies = args.strategies.split(",")
    reps = args.reps or (2 if args.quick else 7 if engine_name == "duckdb" else 4)
    kind = "_mor" if args.mor else "_v3" if args.v3 else ""
    props = TABLE_KINDS[kind]
    sizes = SIZES[engine_name]
    if args.data:
        target = 10_000_000 if engine_name == "duckdb" else 2_000_000
        sizes = [DATA[name](target) for name in args.data.split(",")]
    if args.quick:
        sizes = [replace(i, target_rows=i.target_rows // 10, rows=i.rows // 10) for i in sizes]

    workdir = Path(tempfile.mkdtemp(prefix=f"merge_compare_{engine_name}_"))
    try:
        versions = {"base": export(args.base, workdir / "base_package"), "head": REPO}
        db_path = workdir / "bench.duckdb"
        if engine_name == "spark":
            os.environ["SPARK_STATE_DIR"] = str(workdir / "spark_state")
            (workdir / "spark_state").mkdir()
        projects = {}
        for name, package in versions.items():
            root = workdir / f"project_{name}"
            write_project(root, engine_name, db_path, package)
            projects[name] = DbtProject(root, engine_name)
            projects[name].deps()
        engine = open_engine(engine_name, db_path, projects["head"].root, cluster)

        print(
            f"base: {args.base}  head: {REPO} (working tree)  engine: {engine_name}"
            + {"": "", "_mor": "  merge-on-read targets", "_v3": "  format-v3 targets"}[kind]
            + ("  (marked verified)" if args.verified else "")
        )
        print("| data | strategy | base s, median (min-max) | head s, median (min-max) | change |")
        print("|---|---|---|---|---|")
        for inc in sizes:
            pristine = prepare(engine, inc)
            for strategy in strategies:
                model = f"ours_{strategy}{kind}"
                times: dict[str, list[float]] = {name: [] for name in versions}
                messages: dict[str, str] = {}
                for rep in range(reps + 1):  # rep 0 is the untimed warm-up
                    order = list(versions) if rep % 2 == 0 else list(reversed(versions))
                    for name in order:
                        engine.restore(model, pristine, props)
                        if args.verified:
                            mark_keys_verified(engine, model)
                        run = projects[name].run(model)
                        if run.error:
                            raise SystemExit(f"{name} {model}: {run.error}")
                        messages[name] = run.message
                        if rep:
                            times[name].append(run.seconds)
                base_s, head_s = (statistics.median(times[n]) for n in ("base", "head"))
                change = f"{(head_s / base_s - 1) * 100:+.0f}%"
                if messages["base"] != messages["head"]:
                    change += f" (statistics differ: {messages['base']} / {messages['head']})"
                print(
                    f"| {inc.label} | {strategy} | {_spread(times['base'])}"
                    f" | {_spread(times['head'])} | {change} |",
                    flush=True,
                )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
