"""Where the time of a merge goes on DuckDB: dbt's cost per statement, and our upsert's
statements one by one.

1. **dbt's per-statement overhead**: one trivial statement N times through dbt (`run_query`, and
   `statement(fetch_result=false)` as the materialization runs DDL and DML; timed inside the
   macro by a `run-operation`) against the same statement on a raw DuckDB connection.
2. **Our upsert, statement by statement**, at the 10k, 100k and 1M increments into 10M: dbt's
   own per-statement timing (the `SQL status: OK in X seconds` of its debug log, taken from
   the same events in-process), and the time between statements (Jinja, dbt, commit); the same
   with `merge_check_columns=['updated_at']` and `detect_unchanged=false`, and for dbt-duckdb's
   `delete+insert`, next to the hand-written delete+insert on a raw connection.

    python -m benchmarks.profile [--quick | --scale N] [--reps N] [--out DIR]
    bash scripts/bench.sh --profile --quick            # the same, through the benchmark
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
from pathlib import Path

from . import data
from .baselines import formulations
from .engines import open_engine, prepare
from .project import DbtProject, write_project

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


def main(
    scale: int = 1,
    out: Path | None = None,
    reps: int = 3,
    n: int = 200,
    only: list[str] | None = None,
) -> int:
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
    print(text)
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "profile.md").write_text(text)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="sizes divided by 10")
    parser.add_argument("--scale", type=int, help="divide every size by this")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path, help="also write profile.md here")
    parser.add_argument(
        "--only", help="comma-separated words of the data labels to profile (e.g. snapshot,10k)"
    )
    args = parser.parse_args()
    only = args.only.split(",") if args.only else None
    sys.exit(main(args.scale or (10 if args.quick else 1), args.out, args.reps, only=only))
