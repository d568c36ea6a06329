"""Where the time of a merge goes on DuckDB: dbt's cost per statement, and our upsert's
statements one by one; on Spark (`--engine spark` or `spark_thrift`): the Spark jobs each
statement runs.

1. **dbt's per-statement overhead**: one trivial statement N times through dbt (`run_query`, and
   `statement(fetch_result=false)` as the materialization runs DDL and DML; timed inside the
   macro by a `run-operation`) against the same statement on a raw DuckDB connection.
2. **Our upsert, statement by statement**, at the 10k, 100k and 1M increments into 10M: dbt's
   own per-statement timing (the `SQL status: OK in X seconds` of its debug log, taken from
   the same events in-process), and the time between statements (Jinja, dbt, commit); the same
   with `merge_check_columns=['updated_at']` and `detect_unchanged=false`, and for dbt-duckdb's
   `delete+insert`, next to the hand-written delete+insert on a raw connection.

3. **Spark** (`--engine spark`: dbt-spark's session method, local[2]; `--engine spark_thrift`: its
   thrift method against the benchmark's cluster, benchmarks/engines.py): our upsert and
   full_merge at the 200k increment into 2M (another with --size; divided by --scale),
   statement by statement: dbt's timing of each statement and the Spark jobs submitted while it
   ran (count and summed duration, from the driver's REST API `/api/v1/applications/<id>/jobs`,
   the Spark UI being on for the profile), next to dbt-spark's built-in `merge` and the
   hand-written MERGE INTO and INSERT OVERWRITE (run statement by statement on the engine's own
   connection); --only picks methods by words of their names; --shape picks the source's shape
   (benchmarks/data.py: `snapshot` is the whole table again, 1% changed, 0.1% new, 0.1% gone;
   its size is the target's) and --mor makes every target a merge-on-read Iceberg table.

    python -m benchmarks.profile [--quick | --scale N] [--reps N] [--out DIR]
    python -m benchmarks.profile --engine spark --scale 10 --out /tmp/profile_spark
    python -m benchmarks.profile --engine spark --size 10000000:20000 --only upsert,dbt_merge
    python -m benchmarks.profile --engine spark --shape snapshot --mor --scale 10
    python -m benchmarks.profile --engine spark --shape snapshot --package-dir /tmp/main_export
    bash scripts/bench.sh --profile --quick            # the same, through the benchmark
    bash scripts/bench.sh --profile --engine spark_thrift --scale 10
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

from . import data
from .baselines import formulations
from .engines import open_engine, prepare
from .project import REPO, TABLE_KINDS, THRIFT_PORT_ENV, DbtProject, write_project

TRIVIAL = {
    "select 1": "select 1",
    "create temp table": "create or replace temp table bench_overhead as select 1 as x",
}
OVERHEAD_MACRO = """
{% macro bench_overhead(n) %}
  {% set out = {} %}
  {% set sqls = %(sqls)s %}
  {% for name, sql in sqls.items() %}
    {% set now = modules.datetime.datetime.now %}
    {% set start = now() %}
    {% for i in range(n) %}{% do run_query(sql) %}{% endfor %}
    {% do out.update({'run_query|' ~ name: (now() - start).total_seconds()}) %}
    {% set start = now() %}
    {% for i in range(n) %}
      {% call statement('bench', fetch_result=false, auto_begin=true) %}{{ sql }}{% endcall %}
    {% endfor %}
    {% do out.update({'statement|' ~ name: (now() - start).total_seconds()}) %}
  {% endfor %}
  {% do log('BENCH_OVERHEAD ' ~ tojson(out), info=true) %}
{% endmacro %}
"""


class Events:
    """dbt's SQLQuery / SQLQueryStatus events of one invocation, with their times."""

    def __init__(self) -> None:
        self.events: list[tuple[str, float, dict]] = []

    def __call__(self, msg) -> None:
        name = msg.info.name
        if name in ("SQLQuery", "SQLQueryStatus", "JinjaLogInfo"):
            fields = {f.name: v for f, v in msg.data.ListFields()}
            node = fields.get("node_info")
            if name != "JinjaLogInfo" and not (node and node.unique_id.startswith("model.")):
                return  # dbt's own queries before the model runs (relation cache)
            ts = msg.info.ts.seconds + msg.info.ts.nanos / 1e9
            self.events.append((name, ts, fields))

    def windows(self) -> list[tuple[str, float, float, float]]:
        """(statement, seconds dbt measured, wall-clock start, wall-clock end) per statement."""
        out, query, started = [], None, 0.0
        for name, ts, fields in self.events:
            if name == "SQLQuery":
                query, started = fields.get("sql", ""), ts
            elif name == "SQLQueryStatus" and query is not None:
                out.append((_summary(query), float(fields.get("elapsed", 0.0)), started, ts))
                query = None
        return out

    def statements(self) -> list[tuple[str, float, float]]:
        """(statement, seconds dbt measured, seconds since the previous statement ended)."""
        out, query, last_end = [], None, None
        for name, ts, fields in self.events:
            if name == "SQLQuery":
                query, started = fields.get("sql", ""), ts
            elif name == "SQLQueryStatus" and query is not None:
                gap = started - last_end if last_end else 0.0
                out.append((_summary(query), float(fields.get("elapsed", 0.0)), gap))
                query, last_end = None, ts
        return out


def _summary(sql: str, width: int = 100) -> str:
    sql = re.sub(r"/\*.*?\*/", "", sql, flags=re.S)
    sql = re.sub(r'"[^"]*__dbt_merge_[0-9a-f]+_([a-z]+)[0-9]*"', r"<\1>", sql)
    sql = re.sub(r'"dbt_merge_[A-Za-z0-9_]*"', '"<work>"', sql)
    sql = " ".join(sql.split())
    return sql if len(sql) <= width else sql[: width - 3] + "..."


#: dbt as the benchmark runs it (its file log at debug level, dbt's default), and without it.
LOGGING = {"": [], ", file log off": ["--log-level-file", "none"]}


def overhead(dbt: DbtProject, engine, n: int) -> list[tuple[str, float, float]]:
    """(statement, seconds per statement through dbt's path, on the raw connection)."""
    rows = []
    raw = {}
    for name, sql in TRIVIAL.items():
        start = time.perf_counter()
        for _ in range(n):
            engine.con.execute(sql).fetchall()
        raw[name] = (time.perf_counter() - start) / n
    for suffix, flags in LOGGING.items():
        through_dbt = _through_dbt(dbt, n, flags)
        for name in TRIVIAL:
            for path in ("run_query", "statement"):
                rows.append(
                    (f"{path}: {name}{suffix}", through_dbt[f"{path}|{name}"] / n, raw[name])
                )
    return rows


def _through_dbt(dbt: DbtProject, n: int, flags: list[str]) -> dict[str, float]:
    events = Events()
    dbt.invoke(["run-operation", "bench_overhead", "--args", f"{{n: {n}}}", *flags], [events])
    logged = [f.get("msg", "") for name, _, f in events.events if name == "JinjaLogInfo"]
    line = next((m for m in logged if m.startswith("BENCH_OVERHEAD ")), None)
    if line is None:
        raise RuntimeError("run-operation bench_overhead logged nothing")
    return json.loads(line.split(" ", 1)[1])


#: The dbt models profiled statement by statement: ours (default, merge_check_columns,
#: detect_unchanged=false) and dbt's fastest built-in upsert.
MODELS = ("ours_upsert", "ours_upsert_check", "ours_upsert_always", "dbt_delete_insert")


def model_statements(dbt: DbtProject, engine, pristine: str, model: str, reps: int):
    """Per rep: (statements, dbt's execute-phase seconds, message) of one run of `model`."""
    runs = []
    for rep in range(reps + 1):  # rep 0: untimed warm-up
        engine.restore(model, pristine)
        events = Events()
        run = dbt.run(model, callbacks=[events])
        if run.error:
            raise RuntimeError(f"{model}: {run.error}")
        if rep:
            runs.append((events.statements(), run.seconds, run.message))
    return runs


def raw_upsert(engine, pristine: str, reps: int) -> list[float]:
    """Seconds of the hand-written delete+insert on the raw connection (begin ... commit)."""
    times = []
    for rep in range(reps + 1):
        engine.restore("sql_target", pristine)
        sql = formulations("duckdb", "upsert", engine.target_ref("sql_target"), engine.source_ref())
        seconds = engine.run_statements(sql["delete+insert"])
        if rep:
            times.append(seconds)
    return times


def _per_statement(runs) -> tuple[list[tuple[str, float, float]], float, float, float]:
    """Median seconds and gap per statement over the runs; the medians of the execute phase,
    of the time in statements and of the time between them (each taken per run)."""
    stmts = [s for s, _, _ in runs]
    execute = statistics.median(r[1] for r in runs)
    in_sql = statistics.median(sum(x[1] for x in s) for s in stmts)
    between = statistics.median(r[1] - sum(x[1] for x in r[0]) for r in runs)
    if any(len(s) != len(stmts[0]) for s in stmts):
        return stmts[-1], execute, in_sql, between
    rows = [
        (
            sql,
            statistics.median(s[i][1] for s in stmts),
            statistics.median(s[i][2] for s in stmts),
        )
        for i, (sql, _, _) in enumerate(stmts[0])
    ]
    return rows, execute, in_sql, between


def markdown(scale: int, reps: int, n: int, over, sizes) -> str:
    out = [
        f"Profile on DuckDB, sizes divided by {scale}, median of {reps} run(s) after one "
        "untimed run; load average at the end "
        + "/".join(f"{x:.1f}" for x in os.getloadavg())
        + ".",
        "",
        f"### dbt's cost per statement ({n} statements each, milliseconds per statement)",
        "",
        "| path | through dbt | raw DuckDB connection | dbt's overhead |",
        "|---|---|---|---|",
    ]
    for name, dbt_s, raw_s in over:
        out.append(
            f"| {name} | {dbt_s * 1000:.2f} | {raw_s * 1000:.3f} | {(dbt_s - raw_s) * 1000:.2f} |"
        )
    out += [
        "",
        "### Where the time of an upsert goes (seconds, median)",
        "",
        '"in statements": dbt\'s timing of each statement, summed; "between": the execute '
        "phase minus that (Jinja, dbt's adapter calls, the commit's bookkeeping); medians of "
        "per-run values. Per statement below: median seconds and the gap before it.",
        "",
        "| data | method | statements | in statements | between | execute phase |",
        "|---|---|---|---|---|---|",
    ]
    details = []
    for inc, profiled, raw in sizes:
        for model, runs in profiled.items():
            rows, execute, in_sql, between = _per_statement(runs)
            out.append(
                f"| {inc.label} | {model} | {len(rows)} | {in_sql:.3f} | {between:.3f} "
                f"| {execute:.3f} |"
            )
            details += [
                "",
                f"### {model}, {inc.label}: {len(rows)} statements, execute phase {execute:.3f} s",
                "",
                runs[-1][2],
                "",
                "| # | statement | seconds | gap before it, s |",
                "|---|---|---|---|",
            ]
            details += [
                f"| {i + 1} | `{sql.replace('|', '/')}` | {secs:.4f} | {gap:.4f} |"
                for i, (sql, secs, gap) in enumerate(rows)
            ]
        out.append(
            f"| {inc.label} | hand-written delete+insert, raw connection | 2 (+ begin, commit) "
            f"| {statistics.median(raw):.3f} | - | {statistics.median(raw):.3f} |"
        )
    return "\n".join(out + details) + "\n"


def _emit(text: str, out: Path | None) -> int:
    """Print the profile and, with --out, write it to profile.md there."""
    print(text)
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "profile.md").write_text(text)
    return 0


def main(
    scale: int = 1,
    out: Path | None = None,
    reps: int = 3,
    n: int = 200,
    only: list[str] | None = None,
    engine: str = "duckdb",
    spark_size: tuple[int, int] = (2_000_000, 200_000),
    spark_shape: str = "increment",
    spark_mor: bool = False,
    package: Path | None = None,
) -> int:
    if engine != "duckdb":
        return spark_main(
            engine, scale, out, reps, spark_size, only, spark_shape, spark_mor, package
        )
    workdir = Path(tempfile.mkdtemp(prefix="merge_profile_"))
    try:
        project_dir = workdir / "project_duckdb"
        db_path = workdir / "bench.duckdb"
        write_project(project_dir, "duckdb", db_path)
        sqls = "{" + ", ".join(f"{k!r}: {v!r}" for k, v in TRIVIAL.items()) + "}"
        (project_dir / "macros").mkdir(exist_ok=True)
        (project_dir / "macros" / "bench_overhead.sql").write_text(
            OVERHEAD_MACRO.replace("%(sqls)s", sqls)
        )
        dbt = DbtProject(project_dir, "duckdb")
        dbt.deps()
        engine = open_engine("duckdb", db_path, project_dir)
        over = overhead(dbt, engine, n)
        sizes = []
        target = 10_000_000 // scale
        increments = [data.Increment(target, n // scale) for n in (10_000, 100_000, 1_000_000)]
        increments.append(data.Increment(target, target, shape="snapshot"))
        for inc in increments:
            if only and not any(word in inc.label for word in only):
                continue
            print(f"profiling {inc.label}", file=sys.stderr, flush=True)
            pristine = prepare(engine, inc)
            profiled = {m: model_statements(dbt, engine, pristine, m, reps) for m in MODELS}
            sizes.append((inc, profiled, raw_upsert(engine, pristine, reps)))
        text = markdown(scale, reps, n, over, sizes)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return _emit(text, out)


# ------------------------------------------------------------------ Spark: statements and jobs

#: The dbt models profiled on Spark, and the hand-written formulations (effect, name).
SPARK_MODELS = ("ours_upsert", "ours_full_merge", "dbt_merge")
SPARK_SQL = (
    ("upsert", "MERGE INTO"),
    ("upsert", "MERGE INTO(skip unchanged)"),
    ("full_merge", "MERGE INTO"),
    ("full_merge", "INSERT OVERWRITE"),
)
#: The session driver's Spark UI port for the profile (the cluster's: engines.py).
SESSION_UI_PORT = 18183
#: A job submitted this many seconds outside a statement's window still counts as its job
#: (dbt's event times and Spark's job times come from different clocks of the same machine).
SLACK = 0.05


class SparkJobs:
    """The jobs of a driver, from its REST API (the Spark UI's)."""

    def __init__(self, url: str):
        self.url = url.rstrip("/") + "/api/v1/applications"
        self.app = self._get(self.url)[0]["id"]

    @staticmethod
    def _get(url: str):
        with urllib.request.urlopen(url, timeout=30) as response:
            return json.load(response)

    def since(self, start: float) -> list[tuple[float, float, int]]:
        """(submitted, completed, job id) of every job submitted at or after `start` (epoch s)."""
        jobs = []
        for job in self._get(f"{self.url}/{self.app}/jobs"):
            submitted = _epoch(job.get("submissionTime"))
            if submitted is None or submitted < start - SLACK:
                continue
            completed = _epoch(job.get("completionTime")) or submitted
            jobs.append((submitted, completed, job["jobId"]))
        return sorted(jobs)


def _epoch(stamp: str | None) -> float | None:
    if not stamp:
        return None
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fGMT")
    return moment.replace(tzinfo=timezone.utc).timestamp()


def _assign(windows: list[tuple[str, float, float, float]], jobs) -> tuple[list, list]:
    """Per statement (statement, seconds, start, end): (statement, seconds, seconds until the
    next statement starts, jobs, job seconds); and the jobs submitted before the first one.

    A statement's jobs are those submitted from its start until the next statement starts: dbt
    fetches a query's rows after its SQLQueryStatus event, and with the session method a
    query's jobs run only then (its statement time is the planning alone)."""
    starts = [start for _, _, start, _ in windows]
    bounds = [*starts[1:], max([end for *_, end in windows], default=0.0)]
    rows = [
        [sql, secs, max(secs, nxt - start), 0, 0.0]
        for (sql, secs, start, _), nxt in zip(windows, bounds, strict=True)
    ]
    outside = []
    for submitted, completed, job_id in jobs:
        i = sum(1 for start in starts if start - SLACK <= submitted)
        if i == 0:
            outside.append((submitted, completed, job_id))
            continue
        rows[i - 1][3] += 1
        rows[i - 1][4] += completed - submitted
    return [tuple(r) for r in rows], outside


def spark_model(
    dbt: DbtProject, engine, jobs: SparkJobs, pristine: str, model: str, reps: int, props=None
):
    """Per rep: (statements with their jobs, jobs outside statements, execute-phase seconds,
    message) of one run of `model` (its table restored with the table properties `props`)."""
    runs = []
    for rep in range(reps + 1):  # rep 0: untimed warm-up
        engine.restore(model, pristine, props)
        events = Events()
        start = time.time()
        run = dbt.run(model, callbacks=[events])
        if run.error:
            raise RuntimeError(f"{model}: {run.error}")
        if rep:
            rows, outside = _assign(events.windows(), jobs.since(start))
            runs.append((rows, outside, run.seconds, run.message))
    return runs


def spark_sql(
    engine, jobs: SparkJobs, pristine: str, effect: str, name: str, reps: int, props=None
):
    """The same for a hand-written formulation, its statements timed on the engine's own
    connection (the execute phase: their sum)."""
    runs = []
    table = "sql_target" + next((k for k, v in TABLE_KINDS.items() if v == props), "")
    for rep in range(reps + 1):
        engine.restore(table, pristine, props)
        statements = formulations("spark", effect, engine.target_ref(table), engine.source_ref())[
            name
        ]
        start = time.time()
        windows = []
        for sql in statements:
            began = time.time()
            engine.execute(sql)
            ended = time.time()
            windows.append((_summary(sql), ended - began, began, ended))
        if rep:
            rows, outside = _assign(windows, jobs.since(start))
            runs.append((rows, outside, sum(w[1] for w in windows), ""))
    return runs


def _spark_medians(runs):
    """Per statement: (statement, then the median of each measure of _assign); medians of the
    execute phase, of the statements' jobs, their seconds, and of the jobs outside them."""
    stmts = [r[0] for r in runs]
    total = {
        "execute": statistics.median(r[2] for r in runs),
        "jobs": statistics.median(sum(x[3] for x in r[0]) for r in runs),
        "job_seconds": statistics.median(sum(x[4] for x in r[0]) for r in runs),
        "outside": statistics.median(len(r[1]) for r in runs),
        "in_sql": statistics.median(sum(x[1] for x in r[0]) for r in runs),
    }
    if any(len(s) != len(stmts[0]) for s in stmts):
        return stmts[-1], total
    rows = [
        (sql, *(statistics.median(s[i][k] for s in stmts) for k in range(1, 5)))
        for i, (sql, *_) in enumerate(stmts[0])
    ]
    return rows, total


def spark_markdown(
    engine: str, scale: int, reps: int, inc, profiled: dict, mor: bool = False
) -> str:
    where = {
        "spark": "dbt-spark's session method, local[2] in this process",
        "spark_thrift": "dbt-spark's thrift method, a Thrift server on a standalone cluster "
        "(driver JVM + 2 executor JVMs of 1 core)",
    }[engine]
    out = [
        f"Profile on Spark ({where}), {inc.label} (sizes divided by {scale})"
        + (", merge-on-read Iceberg targets" if mor else "")
        + f", median of {reps} "
        "run(s) after one untimed run; load average at the end "
        + "/".join(f"{x:.1f}" for x in os.getloadavg())
        + ".",
        "",
        "Per statement: dbt's timing (its SQLQuery to SQLQueryStatus events; for hand-written "
        "SQL, the call on the engine's connection), the seconds until the next statement starts "
        "(with the session method a query's jobs run when dbt fetches its rows, after dbt's "
        "timing ends), and the Spark jobs the driver's REST API lists as submitted in that "
        "span; job seconds: their submission-to-completion times, summed (jobs of one "
        'statement may overlap). "outside": jobs submitted during the dbt run before the '
        "model's first statement (dbt's relation cache).",
        "",
        "### Per method (medians)",
        "",
        "| method | statements | statements with jobs | Spark jobs | job seconds "
        "| jobs outside statements | dbt's statement timings, summed s | execute phase s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    details = []
    for method, runs in profiled.items():
        rows, total = _spark_medians(runs)
        with_jobs = sum(1 for r in rows if r[3])
        out.append(
            f"| {method} | {len(rows)} | {with_jobs} | {total['jobs']:g} "
            f"| {total['job_seconds']:.2f} | {total['outside']:g} | {total['in_sql']:.2f} "
            f"| {total['execute']:.2f} |"
        )
        details += [
            "",
            f"### {method}: {len(rows)} statements, {total['jobs']:g} Spark jobs, execute "
            f"phase {total['execute']:.2f} s",
            "",
            *([runs[-1][3], ""] if runs[-1][3] else []),
            "| # | statement | dbt's timing s | until the next statement s | Spark jobs "
            "| job seconds |",
            "|---|---|---|---|---|---|",
        ]
        details += [
            f"| {i + 1} | `{sql.replace('|', '/')}` | {secs:.3f} | {span:.3f} | {n:g} "
            f"| {job_s:.3f} |"
            for i, (sql, secs, span, n, job_s) in enumerate(rows)
        ]
    return "\n".join(out + details) + "\n"


def spark_main(
    engine_name: str,
    scale: int,
    out: Path | None,
    reps: int,
    size: tuple[int, int] = (2_000_000, 200_000),
    only: list[str] | None = None,
    shape: str = "increment",
    mor: bool = False,
    package: Path | None = None,
) -> int:
    """The Spark profile (module docstring, part 3) on `engine_name`: spark or spark_thrift, at
    `size` (target rows, increment rows; divided by `scale`; a snapshot's rows are the
    target's), of the methods whose names hold one of the words `only` (all without), into
    merge-on-read tables if `mor`."""
    from .engines import bench_cluster

    workdir = Path(tempfile.mkdtemp(prefix="merge_profile_spark_"))
    try:
        project_dir = workdir / f"project_{engine_name}"
        rows = size[0] if shape in ("snapshot", "changed") else size[1]
        inc = data.Increment(size[0] // scale, rows // scale, shape=shape)
        if engine_name == "spark":
            os.environ["SPARK_STATE_DIR"] = str(workdir / "spark_state")
            (workdir / "spark_state").mkdir()
            ui = {
                "spark.ui.enabled": "true",
                "spark.ui.port": str(SESSION_UI_PORT),
                "spark.ui.retainedJobs": "100000",
            }
            write_project(project_dir, engine_name, package=package or REPO, spark_conf=ui)
            text = _spark_profile(engine_name, project_dir, inc, scale, reps, only, mor=mor)
        else:
            with bench_cluster(ui=True, log=_log) as (cluster, ui_port):
                os.environ[THRIFT_PORT_ENV] = str(cluster.thrift_port)
                write_project(project_dir, engine_name, package=package or REPO)
                text = _spark_profile(
                    engine_name, project_dir, inc, scale, reps, only, cluster, ui_port, mor
                )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return _emit(text, out)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _spark_profile(
    engine_name, project_dir, inc, scale, reps, only=None, cluster=None, ui_port=None, mor=False
) -> str:
    dbt = DbtProject(project_dir, engine_name)
    dbt.deps()
    engine = open_engine(engine_name, project_dir / "unused.duckdb", project_dir, cluster, ui_port)
    jobs = SparkJobs(engine.ui_url())
    pristine = prepare(engine, inc)
    profiled = {}

    def chosen(method: str) -> bool:
        return not only or any(word in method for word in only)

    # mor: False, True or "_mor" (merge-on-read targets), "_v3" (format 3)
    kind = "_mor" if mor is True else (mor or "")
    props = TABLE_KINDS[kind]
    for model in filter(chosen, SPARK_MODELS):
        model += kind
        _log(f"profiling {model}, {inc.label}")
        profiled[model] = spark_model(dbt, engine, jobs, pristine, model, reps, props)
    for effect, name in SPARK_SQL:
        method = f"hand-written {effect}: {name}"
        if chosen(method):
            _log(f"profiling {method}, {inc.label}")
            profiled[method] = spark_sql(engine, jobs, pristine, effect, name, reps, props)
    return spark_markdown(engine_name, scale, reps, inc, profiled, mor)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="sizes divided by 10")
    parser.add_argument("--scale", type=int, help="divide every size by this")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path, help="also write profile.md here")
    parser.add_argument(
        "--only",
        help="comma-separated words of the data labels (DuckDB, e.g. snapshot,10k) or of the "
        "method names (Spark, e.g. upsert,dbt_merge) to profile",
    )
    parser.add_argument("--engine", choices=["duckdb", "spark", "spark_thrift"], default="duckdb")
    parser.add_argument(
        "--size",
        default="2000000:200000",
        help="Spark: TARGET:INCREMENT rows before --scale (default 2000000:200000)",
    )
    parser.add_argument(
        "--shape",
        choices=["increment", "snapshot", "changed"],
        default="increment",
        help="Spark: the source's shape (benchmarks/data.py); snapshot and changed have the "
        "target's rows",
    )
    parser.add_argument("--mor", action="store_true", help="Spark: merge-on-read Iceberg targets")
    parser.add_argument("--v3", action="store_true", help="Spark: Iceberg targets of format 3")
    parser.add_argument(
        "--package-dir",
        type=Path,
        help="Spark: the dbt_merge package to profile (default: this checkout), e.g. a "
        "`git archive` of main for the job counts before a change",
    )
    args = parser.parse_args()
    only = args.only.split(",") if args.only else None
    scale = args.scale or (10 if args.quick else 1)
    target, increment = (int(n) for n in args.size.split(":"))
    sys.exit(
        main(
            scale,
            args.out,
            args.reps,
            only=only,
            engine=args.engine,
            spark_size=(target, increment),
            spark_shape=args.shape,
            spark_mor="_v3" if args.v3 else "_mor" if args.mor else False,
            package=args.package_dir.resolve() if args.package_dir else None,
        )
    )
