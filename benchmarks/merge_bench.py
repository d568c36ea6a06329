"""Benchmark the merge materialization against dbt's built-in incremental strategies and
hand-written SQL, on DuckDB and Spark (local, Iceberg), side by side.

Only the merge step is timed: every measurement first restores the target table from a pristine
copy (untimed), then runs one method. dbt methods are timed by dbt's own timing of the model's
execute phase (from the model's first statement to its commit, no parsing or start-up);
hand-written SQL by wall clock around its statements. Peak memory is the peak resident set size
of the process doing the work during that step (this Python process for DuckDB, the JVM for
Spark), read as /proc VmHWM after resetting it.

    python -m benchmarks.merge_bench --engine all            # full sizes (~20 min on 2 cores)
    python -m benchmarks.merge_bench --engine duckdb --quick # 1/10 sizes, one repetition
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import baselines, data, memory, report
from .project import BUILTINS, REPO, DbtProject, write_project

SQL_TARGET = "sql_target"


@dataclass(frozen=True)
class Job:
    strategy: str  # the effect: upsert, insert, update, full_merge, deduplicate
    kind: str  # ours | dbt | sql
    method: str  # model name (ours, dbt) or formulation name (sql)


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
    seconds: list[float] = field(default_factory=list)
    peak_mb: list[float] = field(default_factory=list)
    start_mb: list[float] = field(default_factory=list)
    fingerprint: list | None = None
    same_result: bool | None = None
    message: str = ""
    error: str | None = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None


ALL_FORMULATIONS = False
#: --strategies: measure only these (main increments only, no scaling); None = everything.
ONLY: list[str] | None = None
PACKAGE = REPO


def jobs_for(engine: str, strategies: list[str], builtins: bool = True) -> list[Job]:
    jobs = []
    for strategy in strategies:
        jobs.append(Job(strategy, "ours", f"ours_{strategy}"))
        formulations = (
            baselines.duckdb_baselines if engine == "duckdb" else baselines.spark_baselines
        )(strategy, "t", "s")
        names = list(formulations) if ALL_FORMULATIONS else list(formulations)[:1]
        jobs += [Job(strategy, "sql", name) for name in names]
    if builtins:
        jobs += [Job("upsert", "dbt", model) for model in BUILTINS[engine]]
    return jobs


def plan(engine: str, quick: bool) -> list[tuple[data.Increment, list[Job]]]:
    """The increments to measure and the jobs on each (the same increment is measured once)."""
    f = 10 if quick else 1
    all5 = ["upsert", "insert", "update", "full_merge", "deduplicate"]
    if engine == "duckdb":
        big, inc = 10_000_000 // f, 1_000_000 // f
        steps: list[tuple[data.Increment, list[Job]]] = [
            (data.Increment(big, inc), jobs_for(engine, all5)),
            (data.Increment(big, inc, unchanged=0.1), jobs_for(engine, ["upsert"])),
            (data.Increment(big, inc, duplicates=0.05), jobs_for(engine, ["deduplicate"])),
        ]
        scaling = [
            data.Increment(t // f, 100_000 // f) for t in (1_000_000, 10_000_000, 30_000_000)
        ]
        scaling += [data.Increment(big, i // f) for i in (10_000, 1_000_000, 3_000_000)]
        for s in scaling:
            if s != steps[0][0]:
                steps.append(
                    (
                        s,
                        jobs_for(engine, ["upsert"], builtins=False)
                        + [Job("upsert", "dbt", "dbt_merge")],
                    )
                )
        return steps
    big, inc = 2_000_000 // f, 200_000 // f
    return [
        (data.Increment(big, inc), jobs_for(engine, all5)),
        (
            data.Increment(big, inc, duplicates=0.05),
            jobs_for(engine, ["deduplicate"], builtins=False),
        ),
    ]


def measure(engine_name: str, quick: bool, reps: int, workdir: Path, log) -> list[Result]:
    from .engines import open_engine, prepare

    project_dir = workdir / f"project_{engine_name}"
    if engine_name == "spark":
        os.environ["SPARK_STATE_DIR"] = str(workdir / "spark_state")
        (workdir / "spark_state").mkdir(parents=True, exist_ok=True)
    db_path = workdir / "bench.duckdb"
    write_project(project_dir, engine_name, db_path, PACKAGE)
    dbt = DbtProject(project_dir, engine_name)
    dbt.deps()
    engine = open_engine(engine_name, db_path, project_dir)

    results: list[Result] = []
    warmed = False
    steps = plan(engine_name, quick)
    if ONLY:
        steps = [(inc, [j for j in jobs if j.strategy in ONLY]) for inc, jobs in steps[:3]]
        steps = [(inc, jobs) for inc, jobs in steps if jobs]
    for inc, jobs in steps:
        start = time.perf_counter()
        pristine = prepare(engine, inc)
        if not results and not warmed:
            warm_up(engine, dbt, pristine)
            warmed = True
        log(
            f"[{engine_name}] {inc.label}: data ready in {time.perf_counter() - start:.1f}s,"
            f" {len(jobs)} methods x {reps}"
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
            )
            for job in jobs
        }
        for rep in range(reps):
            for job in jobs:
                res = by_job[job]
                if res.error:
                    continue
                run_one(engine, dbt, pristine, job, res, first=rep == 0)
                log(
                    f"  {job.strategy:<11} {job.kind:<4} {job.method:<24} "
                    + (
                        f"{res.seconds[-1]:7.3f}s  peak {res.peak_mb[-1]:7.0f} MB"
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


def run_one(engine, dbt: DbtProject, pristine: str, job: Job, res: Result, first: bool) -> None:
    table = SQL_TARGET if job.kind == "sql" else job.method
    engine.restore(table, pristine)
    pid = engine.memory_pid()
    memory.reset_peak([pid])
    res.start_mb.append(round(memory.rss_mb(pid), 1))
    if job.kind == "sql":
        formulations = (
            baselines.duckdb_baselines if engine.name == "duckdb" else baselines.spark_baselines
        )(job.strategy, engine.target_ref(table), engine.source_ref())
        try:
            seconds = engine.run_statements(formulations[job.method])
        except Exception as exc:  # a formulation the engine rejects is reported, not fatal
            if engine.name == "duckdb":
                engine.execute("rollback")
            res.error = str(exc).splitlines()[0]
            return
    else:
        run = dbt.run(job.method)
        if run.error:
            res.error = run.error.splitlines()[0]
            return
        seconds, res.message = run.seconds, run.message
    res.peak_mb.append(round(memory.peak_mb(pid), 1))
    res.seconds.append(round(seconds, 4))
    if first:
        res.fingerprint = [str(v) for v in engine.fingerprint(table)]


def mark_same_result(results: list[Result]) -> None:
    """Each method's final table against ours for the same effect (count + sum of row hashes)."""
    ours = {r.strategy: r.fingerprint for r in results if r.kind == "ours" and r.fingerprint}
    for r in results:
        if r.kind != "ours" and r.fingerprint and r.strategy in ours:
            r.same_result = r.fingerprint == ours[r.strategy]


def versions(engine: str) -> dict[str, str]:
    from importlib.metadata import version

    out = {"python": platform.python_version(), "dbt-core": version("dbt-core")}
    if engine in ("duckdb", "all"):
        out |= {"dbt-duckdb": version("dbt-duckdb"), "duckdb": version("duckdb")}
    if engine in ("spark", "all"):
        jar = Path(os.environ.get("ICEBERG_JAR", "")).name
        out |= {"dbt-spark": version("dbt-spark"), "pyspark": version("pyspark"), "iceberg": jar}
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
    parser.add_argument("--engine", choices=["duckdb", "spark", "all"], default="all")
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
        "--all-formulations",
        action="store_true",
        help="run every hand-written formulation, not only the fastest one seen so far",
    )
    parser.add_argument(
        "--strategies",
        help="comma-separated effects to measure (e.g. full_merge,upsert); skips the scaling runs",
    )
    parser.add_argument(
        "--package-dir",
        type=Path,
        help="the dbt_merge package to benchmark (default: this checkout), e.g. an older export",
    )
    parser.add_argument("--json-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    global ALL_FORMULATIONS, ONLY, PACKAGE
    ALL_FORMULATIONS = args.all_formulations
    ONLY = args.strategies.split(",") if args.strategies else None
    PACKAGE = args.package_dir.resolve() if args.package_dir else REPO
    reps = args.reps or (1 if args.quick else 2 if args.engine == "spark" else 3)
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
        for engine in ("duckdb", "spark"):
            part = out / f"results_{engine}.json"
            cmd = [sys.executable, "-m", "benchmarks.merge_bench", "--engine", engine]
            cmd += ["--out", str(out), "--json-only"] + (
                ["--reps", str(args.reps)] if args.reps else []
            )
            cmd += (["--quick"] if args.quick else []) + (["--keep"] if args.keep else [])
            cmd += ["--all-formulations"] if args.all_formulations else []
            cmd += ["--strategies", args.strategies] if args.strategies else []
            cmd += ["--package-dir", str(PACKAGE)] if args.package_dir else []
            if subprocess.run(cmd, cwd=REPO).returncode != 0:
                log(f"{engine}: benchmark failed; reporting the other engine only")
                continue
            results += json.loads(part.read_text())["results"]
            part.unlink()
    else:
        workdir = Path(tempfile.mkdtemp(prefix=f"merge_bench_{args.engine}_"))
        try:
            measured = measure(args.engine, args.quick, reps, workdir, log)
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
        "reps": reps
        if args.engine != "all"
        else args.reps or ("1" if args.quick else "3 DuckDB, 2 Spark"),
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
