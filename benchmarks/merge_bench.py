"""Benchmark the merge materialization against dbt's built-in incremental strategies and
hand-written SQL, on DuckDB and Spark (Iceberg), side by side. Spark runs in two ways: `spark`,
dbt-spark's session method in this process (local[2]); `spark_thrift`, dbt-spark's thrift method
against a Thrift server on a standalone cluster this benchmark starts and stops
(scripts/spark_cluster.py, state in .state/bench_cluster, ports 7177/10100/18180/18181), whose
executors are separate JVMs.

Only the merge step is timed: every measurement first restores the target table from a pristine
copy (untimed), then runs one method. dbt methods are timed by dbt's own timing of the model's
execute phase (from the model's first statement to its commit, no parsing or start-up);
hand-written SQL by wall clock around its statements. Peak memory is the peak resident set size
of the process doing the work during that step (this Python process for DuckDB, the JVM for
Spark; for spark_thrift the Thrift server's JVM, the driver, and separately the sum of the
executor JVMs' peaks), read as /proc VmHWM after resetting it.

    python -m benchmarks.merge_bench --engine all            # every workload, full sizes
    python -m benchmarks.merge_bench --engine duckdb --quick # 1/10 sizes, one repetition
    python -m benchmarks.merge_bench --engine spark --scale 100 --workloads conditional,cdc
    python -m benchmarks.merge_bench --engine spark_thrift --scale 20 --reps 1
    python -m benchmarks.merge_bench --profile --quick       # see benchmarks/profile.py

Workloads (WORKLOADS below; BENCHMARKS.md describes each): increments, increments_mor,
increments_v3, rewrite, rewrite_mor, unchanged, duplicates, small, empty, snapshot,
snapshot_mor, snapshot_v3, conditional, cdc, first_load, full_refresh, scaling, small_1k (the
_mor, _v3, small_1k and rewrite workloads: Spark only).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from . import baselines, data, memory, report
from .project import (
    BUILTINS,
    REPO,
    STRATEGIES,
    TABLE_KINDS,
    THRIFT_PORT_ENV,
    UPDATING,
    DbtProject,
    expectation,
    family,
    write_project,
)

SQL_TARGET = "sql_target"
#: The engines `--engine all` runs, one process each, in this order.
ENGINES = ("duckdb", "spark", "spark_thrift")
#: Every workload, in the order they run (`--workloads` picks some).
WORKLOADS = {
    "increments": "every strategy at the main increment (half updates, half new), with "
    "merge_check_columns and detect_unchanged=false where they apply",
    "increments_mor": "Spark: upsert and full_merge at the main increment into merge-on-read "
    "Iceberg tables, against the same SQL and dbt-spark's merge on such tables",
    "increments_v3": "Spark: the increments_mor workload on Iceberg tables of format version 3 "
    "(copy-on-write)",
    "rewrite": "Spark: full_merge when every row changes (the whole table again, each row "
    "changed): ours by its own choice and forced to MERGE INTO, against INSERT OVERWRITE",
    "rewrite_mor": "Spark: the rewrite workload on merge-on-read Iceberg tables",
    "unchanged": "upsert, 10% of the increment identical to the target",
    "duplicates": "deduplicate, +5% rows repeating keys",
    "small": "DuckDB: 10k and 100k increments into 10M, every strategy",
    "empty": "an empty increment (no rows today): upsert against dbt's merge (DuckDB also "
    "delete+insert); on Spark also empty_mor, empty_v3",
    "small_1k": "Spark: a 1,000-row increment (500 updates, 500 new) into 2M, upsert against "
    "dbt-spark's merge; also small_1k_mor, small_1k_v3",
    **{f"{w}{k}": f"Spark: the {w} workload on {t} Iceberg tables" for w in ("empty", "small_1k")
       for k, t in (("_mor", "merge-on-read"), ("_v3", "format-3"))},
    "snapshot": "the whole table again, 1% changed, 0.1% new, 0.1% gone (Spark: upsert and "
    "full_merge against dbt-spark's merge and the hand-written MERGE INTO, plain and skipping "
    "unchanged rows)",
    "snapshot_mor": "Spark: the snapshot workload on merge-on-read Iceberg tables",
    "snapshot_v3": "Spark: the snapshot workload on Iceberg tables of format version 3 "
    "(copy-on-write)",
    "conditional": "upsert with merge_update_condition, 30% of the matched rows late",
    "cdc": "upsert with delete_condition, an op column with 'D' rows",
    "first_load": "DuckDB: the first run of 5M rows against dbt's table materialization",
    "full_refresh": "DuckDB: --full-refresh of 5M rows against dbt's table materialization",
    "scaling": "upsert, against dbt's merge and the hand-written SQL: on DuckDB 100k into 1M "
    "and 30M, and 3M into 10M; on Spark 20k and 200k into 2M and 10M",
}
#: The scaling workload on Spark: (target rows, increment rows), before --scale.
SPARK_SCALING = [(t, i) for t in (2_000_000, 10_000_000) for i in (20_000, 200_000)]


@dataclass(frozen=True)
class Job:
    strategy: str  # the effect: a strategy, upsert_if_newer, cdc or load (see baselines.py)
    kind: str  # ours | dbt | sql
    method: str  # model name (ours, dbt) or formulation name (sql)


@dataclass
class Step:
    """One workload on one source: the jobs measured on it, each from the same starting table."""

    workload: str
    inc: data.Increment
    jobs: list[Job]
    empty_start: bool = False  # start from no table (a first load), not the pristine target
    dbt_args: tuple[str, ...] = ()
    kind: str = ""  # Spark: the kind of Iceberg table of every target ('' copy-on-write v2,
    # '_mor' merge-on-read, '_v3' format 3: project.TABLE_KINDS)


@dataclass
class Result:
    engine: str
    data: str
    label: str
    target_rows: int
    increment_rows: int
    strategy: str
    kind: str
    method: str
    workload: str = ""
    seconds: list[float] = field(default_factory=list)
    peak_mb: list[float] = field(default_factory=list)
    #: spark_thrift: the executor JVMs (sum of each one's peak); peak_mb is the driver's
    executor_peak_mb: list[float] = field(default_factory=list)
    start_mb: list[float] = field(default_factory=list)
    fingerprint: list | None = None
    same_result: bool | None = None
    compared_with: str | None = None
    message: str = ""
    error: str | None = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None


ALL_FORMULATIONS = False
#: --first-runs: Spark merge-on-read and v3 targets as a table another writer committed to last
#: (the write-once path reads its keys), not as one this package merged last
FIRST_RUNS = False
#: --strategies: measure only these effects; None = everything.
ONLY: list[str] | None = None
PACKAGE = REPO


def sql_jobs(engine: str, effect: str, names: list[str] | None = None) -> list[Job]:
    """Hand-written SQL for `effect`: the named formulations, else the first (or all)."""
    if names is None:
        names = list(baselines.formulations(engine, effect, "t", "s"))
        names = names if ALL_FORMULATIONS else names[:1]
    return [Job(effect, "sql", name) for name in names]


def jobs_for(
    engine: str, strategies: list[str], builtins: bool = True, options: bool = False
) -> list[Job]:
    """Ours for each strategy (with the change-detection options if `options`), the first
    hand-written formulation, and dbt's built-ins (compared with upsert)."""
    jobs = []
    for strategy in strategies:
        jobs.append(Job(strategy, "ours", f"ours_{strategy}"))
        if options and strategy in UPDATING:
            jobs += [Job(strategy, "ours", f"ours_{strategy}{s}") for s in ("_check", "_always")]
        jobs += sql_jobs(engine, strategy)
    if builtins:
        # dbt's built-ins do an upsert; alone with another strategy, they stand in for it
        effect = "upsert" if "upsert" in strategies else strategies[0]
        jobs += [Job(effect, "dbt", model) for model in BUILTINS[family(engine)]]
    return jobs


def scaling_jobs(engine: str) -> list[Job]:
    """The scaling workload's methods: our upsert, the first hand-written upsert and dbt's
    built-in `merge` (the one built-in both engines have)."""
    return jobs_for(engine, ["upsert"], builtins=False) + [Job("upsert", "dbt", "dbt_merge")]


def plan(engine: str, scale: int) -> list[Step]:
    """The workloads to measure (sizes divided by `scale`)."""
    f = scale
    all5 = list(STRATEGIES)
    if family(engine) == "spark":
        big, inc = 2_000_000 // f, 200_000 // f
        everything = data.Increment(big, big, shape="changed")
        mor_full_merge = [
            Job("full_merge", "ours", "ours_full_merge_mor"),
            *sql_jobs(engine, "full_merge", ["INSERT OVERWRITE"]),
        ]
        snapshot = data.Increment(big, big, shape="snapshot")

        def snapshot_jobs(kind: str) -> list[Job]:
            # the snapshot load: a full_merge of it deletes the 0.1% gone, under the guard
            return [
                Job("upsert", "ours", f"ours_upsert{kind}"),
                Job("full_merge", "ours", f"ours_full_merge_guarded{kind}"),
                *sql_jobs(engine, "upsert", ["MERGE INTO", "MERGE INTO(skip unchanged)"]),
                *sql_jobs(engine, "full_merge", ["MERGE INTO"]),
                Job("upsert", "dbt", f"dbt_merge{kind}"),
            ]

        def increment_jobs(kind: str) -> list[Job]:
            return [
                Job("upsert", "ours", f"ours_upsert{kind}"),
                *sql_jobs(engine, "upsert"),
                Job("full_merge", "ours", f"ours_full_merge{kind}"),
                *sql_jobs(engine, "full_merge", ["INSERT OVERWRITE"]),
                Job("upsert", "dbt", f"dbt_merge{kind}"),
            ]

        return [
            Step("increments", data.Increment(big, inc), jobs_for(engine, all5, options=True)),
            Step("increments_mor", data.Increment(big, inc), increment_jobs("_mor"), kind="_mor"),
            Step("increments_v3", data.Increment(big, inc), increment_jobs("_v3"), kind="_v3"),
            Step(
                "rewrite",
                everything,
                [
                    Job("full_merge", "ours", "ours_full_merge"),
                    Job("full_merge", "ours", "ours_full_merge_merge"),
                    *sql_jobs(engine, "full_merge", ["INSERT OVERWRITE", "MERGE INTO"]),
                    # every key is in the source: dbt's upsert leaves the same table
                    Job("full_merge", "dbt", "dbt_merge"),
                ],
            ),
            Step(
                "rewrite_mor",
                everything,
                [*mor_full_merge, Job("full_merge", "dbt", "dbt_merge_mor")],
                kind="_mor",
            ),
            Step("snapshot", snapshot, snapshot_jobs("")),
            Step("snapshot_mor", snapshot, snapshot_jobs("_mor"), kind="_mor"),
            Step("snapshot_v3", snapshot, snapshot_jobs("_v3"), kind="_v3"),
            Step(
                "duplicates",
                data.Increment(big, inc, duplicates=0.05),
                jobs_for(engine, ["deduplicate"], builtins=False),
            ),
            Step(
                "conditional",
                data.Increment(big, inc, shape="late"),
                [Job("upsert_if_newer", "ours", "ours_upsert_if_newer")]
                + sql_jobs(engine, "upsert_if_newer"),
            ),
            Step(
                "cdc",
                data.Increment(big, inc, shape="cdc"),
                [Job("cdc", "ours", "ours_upsert_cdc")] + sql_jobs(engine, "cdc"),
            ),
            *(
                Step("scaling", data.Increment(t // f, i // f), scaling_jobs(engine))
                for t, i in SPARK_SCALING
            ),
            # a pipeline's small models: 1,000 rows, and nothing today (round 13)
            *(
                Step(f"{name}{kind}", data.Increment(big, rows, shape=shape),
                     [Job("upsert", "ours", f"ours_upsert{kind}"),
                      Job("upsert", "dbt", f"dbt_merge{kind}")], kind=kind)
                for name, rows, shape in (("small_1k", 1_000, "increment"), ("empty", 0, "empty"))
                for kind in ("", "_mor", "_v3")
            ),
        ]
    big, inc = 10_000_000 // f, 1_000_000 // f
    load = data.Increment(5_000_000 // f, 5_000_000 // f, shape="full")
    load_jobs = [
        Job("load", "ours", "ours_upsert"),
        Job("load", "dbt", "dbt_table"),
        *sql_jobs(engine, "load"),
    ]
    return [
        Step("increments", data.Increment(big, inc), jobs_for(engine, all5, options=True)),
        Step(
            "unchanged",
            data.Increment(big, inc, unchanged=0.1),
            jobs_for(engine, ["upsert"], options=True),
        ),
        Step(
            "duplicates",
            data.Increment(big, inc, duplicates=0.05),
            jobs_for(engine, ["deduplicate"]),
        ),
        *(
            Step("small", data.Increment(big, n // f), jobs_for(engine, all5, options=True))
            for n in (10_000, 100_000)
        ),
        Step(
            "empty",
            data.Increment(big, 0, shape="empty"),
            [
                Job("upsert", "ours", "ours_upsert"),
                Job("upsert", "dbt", "dbt_delete_insert"),
                Job("upsert", "dbt", "dbt_merge"),
            ],
        ),
        Step(
            "snapshot",
            data.Increment(big, big, shape="snapshot"),
            [
                Job("upsert", "ours", "ours_upsert"),
                Job("upsert", "ours", "ours_upsert_check"),
                Job("upsert", "ours", "ours_upsert_always"),
                Job("full_merge", "ours", "ours_full_merge_guarded"),
                *sql_jobs(
                    engine,
                    "upsert",
                    ["delete+insert", "skip-unchanged", "skip-unchanged(updated_at)"],
                ),
                *sql_jobs(engine, "full_merge", ["replace-all"]),
                Job("upsert", "dbt", "dbt_delete_insert"),
                Job("upsert", "dbt", "dbt_merge"),
            ],
        ),
        Step(
            "conditional",
            data.Increment(big, inc, shape="late"),
            [
                Job("upsert_if_newer", "ours", "ours_upsert_if_newer"),
                Job("upsert_if_newer", "dbt", "dbt_merge_if_newer"),
                *sql_jobs(engine, "upsert_if_newer", ["delete+insert(newer)", "MERGE INTO"]),
            ],
        ),
        Step(
            "cdc",
            data.Increment(big, inc, shape="cdc"),
            [
                Job("cdc", "ours", "ours_upsert_cdc"),
                Job("cdc", "dbt", "dbt_merge_cdc"),
                *sql_jobs(engine, "cdc", ["delete+insert(op)", "MERGE INTO"]),
            ],
        ),
        Step("first_load", load, load_jobs, empty_start=True),
        Step("full_refresh", load, load_jobs, dbt_args=("--full-refresh",)),
        *(
            Step("scaling", data.Increment(t // f, i // f), scaling_jobs(engine))
            for t, i in ((1_000_000, 100_000), (30_000_000, 100_000), (10_000_000, 3_000_000))
        ),
    ]


def select_steps(steps: list[Step], workloads: list[str] | None) -> list[Step]:
    """The steps of the chosen workloads, each keeping only the jobs of --strategies."""
    out = []
    for step in steps:
        if workloads and step.workload not in workloads:
            continue
        jobs = [j for j in step.jobs if not ONLY or j.strategy in ONLY]
        if any(j.kind == "ours" for j in jobs):
            out.append(replace(step, jobs=jobs))
    return out


def measure(
    engine_name: str, scale: int, reps: int, workdir: Path, log, workloads: list[str] | None
) -> list[Result]:
    if engine_name != "spark_thrift":
        return _measure(engine_name, scale, reps, workdir, log, workloads)
    from .engines import bench_cluster

    with bench_cluster(log=log) as (cluster, _):
        os.environ[THRIFT_PORT_ENV] = str(cluster.thrift_port)
        return _measure(engine_name, scale, reps, workdir, log, workloads, cluster)


def _measure(
    engine_name: str,
    scale: int,
    reps: int,
    workdir: Path,
    log,
    workloads: list[str] | None,
    cluster=None,
) -> list[Result]:
    from .engines import open_engine, prepare

    project_dir = workdir / f"project_{engine_name}"
    if engine_name == "spark":
        os.environ["SPARK_STATE_DIR"] = str(workdir / "spark_state")
        (workdir / "spark_state").mkdir(parents=True, exist_ok=True)
    db_path = workdir / "bench.duckdb"
    write_project(project_dir, engine_name, db_path, PACKAGE)
    dbt = DbtProject(project_dir, engine_name)
    dbt.deps()
    engine = open_engine(engine_name, db_path, project_dir, cluster)

    results: list[Result] = []
    warmed = False
    for step in select_steps(plan(engine_name, scale), workloads):
        inc, jobs = step.inc, step.jobs
        start = time.perf_counter()
        pristine = prepare(engine, inc)
        if not warmed:
            warm_up(engine, dbt, pristine)
            warmed = True
        log(
            f"[{engine_name}] {step.workload}: {inc.label}: data ready in"
            f" {time.perf_counter() - start:.1f}s, {len(jobs)} methods x {reps}"
        )
        by_job = {
            job: Result(
                engine_name,
                inc.table,
                inc.label,
                inc.target_rows,
                inc.rows,
                job.strategy,
                job.kind,
                job.method,
                step.workload,
            )
            for job in jobs
        }
        for rep in range(reps):
            for job in jobs:
                res = by_job[job]
                if res.error:
                    continue
                run_one(engine, dbt, pristine, step, job, res, first=rep == 0)
                log(
                    f"  {job.strategy:<15} {job.kind:<4} {job.method:<26} "
                    + (
                        f"{res.seconds[-1]:7.3f}s  peak {res.peak_mb[-1]:7.0f} MB"
                        + (f" + {res.executor_peak_mb[-1]:.0f}" if res.executor_peak_mb else "")
                        + f"  {res.message}"
                        if not res.error
                        else f"FAILED: {res.error[:200]}"
                    )
                )
        mark_same_result(list(by_job.values()))
        results += by_job.values()
    return results


def warm_up(engine, dbt: DbtProject, pristine: str) -> None:
    """One untimed run of our model and dbt's: the first run in a process compiles the macros."""
    for model in ("ours_upsert", "dbt_merge"):
        engine.restore(model, pristine)
        dbt.run(model)


def run_one(
    engine, dbt: DbtProject, pristine: str, step: Step, job: Job, res: Result, first: bool
) -> None:
    """Restore the starting table, run the job, record its time, memory and (first time) the
    fingerprint of the table it leaves. A failing job becomes an error row, never a crash."""
    from .engines import mark_keys_verified

    table = SQL_TARGET + step.kind if job.kind == "sql" else job.method
    if step.empty_start:
        engine.restore_empty(table)
    else:
        engine.restore(table, pristine, TABLE_KINDS[step.kind])
        if job.kind == "ours" and step.kind and not FIRST_RUNS:
            # a table this package merged before and nobody else wrote since (a pipeline's
            # steady state): the write-once path need not read its keys (merge_on_branch)
            mark_keys_verified(engine, table)
    pid, executors = engine.memory_pid(), engine.executor_pids()
    memory.reset_peak([pid, *executors])
    res.start_mb.append(round(memory.rss_mb(pid), 1))
    try:
        if job.kind == "sql":
            statements = baselines.formulations(
                engine.name, job.strategy, engine.target_ref(table), engine.source_ref()
            )[job.method]
            seconds = engine.run_statements(statements)
        else:
            run = dbt.run(job.method, step.dbt_args)
            if run.error:
                res.error = _first_line(run.error)
                return
            seconds, res.message = run.seconds, run.message
            expect = expectation(job.method) if job.kind == "ours" else None
            if expect and not re.search(expect[0], res.message):
                res.error = f"option not applied? ({expect[1]}): {res.message}"
                return
    except Exception as exc:  # an engine's or dbt's error is reported, not fatal
        res.error = _first_line(str(exc)) or type(exc).__name__
        return
    res.peak_mb.append(round(memory.peak_mb(pid), 1))
    if executors:
        res.executor_peak_mb.append(round(sum(memory.peak_mb(p) for p in executors), 1))
    res.seconds.append(round(seconds, 4))
    if first:
        res.fingerprint = [str(v) for v in engine.fingerprint(table)]


def _first_line(error: str) -> str:
    """The line of an error that says what went wrong (dbt's first line names only the model)."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    if len(lines) > 1 and re.match(r"\w+ Error in (model|macro)", lines[0]):
        return lines[1]
    return lines[0] if lines else ""


def mark_same_result(results: list[Result]) -> None:
    """Each method's final table (row count and sum of row hashes) against the reference of the
    same effect: our first method that ran, else (ours failed) the first method that ran, so
    the others are still checked against each other."""
    ref: dict[str, Result] = {}
    for r in sorted((r for r in results if r.fingerprint), key=lambda r: r.kind != "ours"):
        ref.setdefault(r.strategy, r)
    for r in results:
        base = ref.get(r.strategy)
        if r.fingerprint and base and base is not r:
            r.same_result = r.fingerprint == base.fingerprint
            r.compared_with = base.method


def versions(engine: str) -> dict[str, str]:
    from importlib.metadata import version

    out = {"python": platform.python_version(), "dbt-core": version("dbt-core")}
    if engine in ("duckdb", "all"):
        out |= {"dbt-duckdb": version("dbt-duckdb"), "duckdb": version("duckdb")}
    if engine in ("spark", "spark_thrift", "all"):
        jar = Path(os.environ.get("ICEBERG_JAR", "")).name
        out |= {"dbt-spark": version("dbt-spark"), "pyspark": version("pyspark"), "iceberg": jar}
    if engine in ("spark_thrift", "all"):
        out |= {"PyHive": version("PyHive")}
    return out


def machine() -> str:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_gb = int(Path("/proc/meminfo").read_text().split()[1]) / 1024 / 1024
    system = f"{platform.system()} {platform.release()}"
    return f"{os.cpu_count()} cores ({cpu}), {mem_gb:.0f} GiB RAM, {system}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--engine",
        choices=[*ENGINES, "all"],
        default="all",
        help="spark: dbt-spark's session method, local[2]; spark_thrift: its thrift method "
        "against a standalone cluster started for the run; all: each in turn",
    )
    parser.add_argument(
        "--quick", action="store_true", help="1/10 of the sizes, one repetition (smoke run)"
    )
    parser.add_argument(
        "--reps",
        type=int,
        help="repetitions per method (default 3 on DuckDB, 2 on Spark, 1 with --quick)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="folder for results.json, results.md and scaling.png "
        "(default benchmarks/results, or a temp folder with --quick)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary databases")
    parser.add_argument(
        "--first-runs", action="store_true",
        help="Spark: merge-on-read and v3 targets not marked as merged by the package last "
        "(every run of ours reads the table's keys, as after another writer's commit)",
    )
    parser.add_argument(
        "--all-formulations",
        action="store_true",
        help="run every hand-written formulation, not only the fastest one seen so far",
    )
    parser.add_argument(
        "--strategies",
        help="comma-separated effects to measure (e.g. full_merge,upsert); without --workloads, "
        "only the increments, unchanged and duplicates workloads",
    )
    parser.add_argument(
        "--workloads",
        help="comma-separated workloads to run (default all): " + ", ".join(WORKLOADS),
    )
    parser.add_argument(
        "--scale",
        type=int,
        help="divide every size by this (default 1, or 10 with --quick), e.g. --scale 100",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="instead of the benchmark: dbt's per-statement overhead and our upsert's "
        "statements one by one (benchmarks/profile.py; takes --quick and --scale); with "
        "--engine spark or spark_thrift, the Spark jobs of each statement",
    )
    parser.add_argument(
        "--package-dir",
        type=Path,
        help="the dbt_merge package to benchmark (default: this checkout), e.g. an older export",
    )
    parser.add_argument("--json-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    scale = args.scale or (10 if args.quick else 1)
    if args.profile:
        from . import profile

        # --engine spark or spark_thrift: the Spark profile; otherwise DuckDB's
        engine = args.engine if args.engine in ("spark", "spark_thrift") else "duckdb"
        return profile.main(scale, args.out, args.reps or 3, engine=engine)
    global ALL_FORMULATIONS, ONLY, PACKAGE, FIRST_RUNS
    ALL_FORMULATIONS = args.all_formulations
    FIRST_RUNS = args.first_runs
    ONLY = args.strategies.split(",") if args.strategies else None
    workloads = args.workloads.split(",") if args.workloads else None
    if ONLY and not workloads:
        workloads = ["increments", "unchanged", "duplicates"]
    unknown = set(workloads or []) - set(WORKLOADS)
    if unknown:
        parser.error(
            f"unknown workload(s) {', '.join(sorted(unknown))}; one of {', '.join(WORKLOADS)}"
        )
    PACKAGE = args.package_dir.resolve() if args.package_dir else REPO
    reps = args.reps or (1 if args.quick else 3 if args.engine == "duckdb" else 2)
    out = args.out or (
        Path(tempfile.mkdtemp(prefix="merge_bench_out_"))
        if args.quick
        else REPO / "benchmarks" / "results"
    )
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    load_at_start = os.getloadavg()

    def log(msg: str) -> None:
        print(f"{time.time() - started:7.1f}s {msg}", file=sys.stderr, flush=True)

    results: list[dict] = []
    if args.engine == "all":
        # One process per engine: a fresh DuckDB buffer pool and one JVM, never both at once.
        for engine in ENGINES:
            part = out / f"results_{engine}.json"
            cmd = [sys.executable, "-m", "benchmarks.merge_bench", "--engine", engine]
            cmd += ["--out", str(out), "--json-only"] + (
                ["--reps", str(args.reps)] if args.reps else []
            )
            cmd += (["--quick"] if args.quick else []) + (["--keep"] if args.keep else [])
            cmd += ["--all-formulations"] if args.all_formulations else []
            cmd += ["--first-runs"] if args.first_runs else []
            cmd += ["--strategies", args.strategies] if args.strategies else []
            cmd += ["--workloads", args.workloads] if args.workloads else []
            cmd += ["--scale", str(args.scale)] if args.scale else []
            cmd += ["--package-dir", str(PACKAGE)] if args.package_dir else []
            if subprocess.run(cmd, cwd=REPO).returncode != 0:
                log(f"{engine}: benchmark failed; reporting the other engine only")
                continue
            results += json.loads(part.read_text())["results"]
            part.unlink()
    else:
        workdir = Path(tempfile.mkdtemp(prefix=f"merge_bench_{args.engine}_"))
        try:
            measured = measure(args.engine, scale, reps, workdir, log, workloads)
        finally:
            if not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)
            else:
                log(f"kept {workdir}")
        results = [asdict(r) | {"median": r.median} for r in measured]
        if args.json_only:
            (out / f"results_{args.engine}.json").write_text(
                json.dumps({"results": results}, indent=1)
            )
            return 0

    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "engine": args.engine,
        "quick": args.quick,
        "scale": scale,
        "reps": reps
        if args.engine != "all"
        else args.reps or ("1" if args.quick else "3 DuckDB, 2 Spark (local and cluster)"),
        "load_average": {"start": load_at_start, "end": os.getloadavg()},
        "versions": versions(args.engine),
        "machine": machine(),
        "wall_seconds": round(time.time() - started),
    }
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    text = report.markdown(meta, results)
    (out / "results.md").write_text(text)
    print(text)
    plot = report.plot_scaling(results, out / "scaling.png")
    if plot:
        log(f"plot: {plot}")
    log(f"results: {out}/results.md, results.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
