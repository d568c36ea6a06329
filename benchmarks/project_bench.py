"""A pipeline of many small models in one `dbt run --threads 4`: ours against dbt-spark's `merge`.

Most models of a dbt project on Spark are small increments (a thousand changed rows into a
large table) or have nothing to merge today, so what a run costs per model, not per row,
decides the pipeline's wall time. This benchmark makes `--models` Iceberg targets of
`--rows` rows each (copy-on-write, merge-on-read and format 3 in turn), and for each of them a
source: a 1,000-row increment (500 updates, 500 new keys, spread over the table), or, for every
`--empty`-th model, no rows at all. Two projects read the same sources into copies of the same
targets: one of `merge` models (`strategy='upsert'`), one of dbt-spark's incremental `merge`
(`incremental_strategy='merge'`), both `unique_key='id'`, `file_format='iceberg'`, each with its
table's properties. A third project measures the floor of a merge that checks and counts
(`checked_merge`, FLOOR_MATERIALIZATION: five hand-written statements a model). Each timed run
is one `dbt run --threads N` of the whole project, wall time in this process (dbt-spark's
`session` method: the threads share the SparkSession, as in a user's pipeline), every target
restored to its pristine snapshot before the run; the projects alternate, after one untimed run
of each. Every run must succeed and leave each target
with the expected rows (counted), else the benchmark stops.

    python -m benchmarks.project_bench                        # 50 models of 200k rows, 3 reps
    python -m benchmarks.project_bench --models 10 --rows 20000 --reps 1    # a quick look

Writes a Markdown table (and the runs) to stdout and, with --out, to a folder.

`--profile` also says where each method's runs spent their time, per model: each kind of
statement (how many, and the seconds from sending it until its rows were read, which for a
SELECT includes running it: dbt-spark's `session` cursor runs a query when its rows are
fetched), and what remains of the models' time (dbt and the macros' Python, Jinja). It times
the adapter's `execute` in this process; with `--threads 1` the parts add up to the models'
time, with more threads they overlap.

    python -m benchmarks.project_bench --models 20 --threads 1 --reps 2 --profile
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from . import data
from .project import MOR_PROPERTIES, REPO, SPARK_CONF, V3_PROPERTIES, DbtProject

KINDS = {"cow": None, "mor": MOR_PROPERTIES, "v3": V3_PROPERTIES}
METHODS = {
    "ours": "materialized='merge', strategy='upsert'",
    "dbt_spark": "materialized='incremental', incremental_strategy='merge'",
    "floor": "materialized='checked_merge'",
}
#: the floor of a checked and counted merge, hand-written: the SELECT staged once (a cached
#: temporary view), one pass over it for its NULL and repeated keys and its rows, one join with
#: the target for the counts (new, changed, unchanged), and one MERGE that skips unchanged rows;
#: the column names are the benchmark's, known to whoever writes it (no `describe`), and nothing
#: is checked about the table or the session (no format, snapshot, other writer or stale view)
FLOOR_MATERIALIZATION = """
{% materialization checked_merge, adapter='spark' %}
  {%- set target = this.incorporate(type='table') -%}
  {%- set src = this.identifier ~ '__floor_src' -%}
  {%- set cols = ['customer', 'amount', 'category', 'updated_at'] -%}
  {%- set changed -%}
    {%- for c in cols %}{{ ' or ' if not loop.first }}s.{{ c }} is distinct from t.{{ c }}
    {%- endfor -%}
  {%- endset -%}
  {% call statement('stage') %}create or replace temporary view {{ src }} as {{ sql }}{% endcall %}
  {% call statement('cache') %}cache lazy table {{ src }}{% endcall %}
  {% call statement('check', fetch_result=true) %}
    select count(*) - count(id), count(id) - count(distinct id), count(*) from {{ src }}
  {% endcall %}
  {%- set check = load_result('check').table.rows[0] -%}
  {% if check[0] or check[1] %}
    {{ exceptions.raise_compiler_error('NULL or repeated keys in the SELECT') }}
  {% endif %}
  {% call statement('count', fetch_result=true) %}
    select count(case when t.id is null then 1 end),
           count(case when t.id is not null and ({{ changed }}) then 1 end),
           count(case when t.id is not null and not ({{ changed }}) then 1 end)
    from {{ src }} as s left join {{ target }} as t on s.id = t.id
  {% endcall %}
  {%- set counts = load_result('count').table.rows[0] -%}
  {% if counts[0] + counts[1] > 0 %}
    {% call statement('merge') %}
      merge into {{ target }} as t using {{ src }} as s on s.id = t.id
      when matched and ({{ changed }}) then update set *
      when not matched then insert *
    {% endcall %}
  {% endif %}
  {% call statement('main') %}drop view if exists {{ src }}{% endcall %}
  {% do store_result('main', response=counts[0] ~ ' inserted, ' ~ counts[1] ~ ' updated, '
                     ~ counts[2] ~ ' unchanged') %}
  {{ return({'relations': [target]}) }}
{% endmaterialization %}
"""


def model_names(models: int) -> list[str]:
    return [f"m{i:03d}" for i in range(models)]


def kind_of(i: int) -> str:
    return list(KINDS)[i % len(KINDS)]


def is_empty(i: int, every: int) -> bool:
    return bool(every) and i % every == every - 1


def write_projects(root: Path, models: int, threads: int) -> dict[str, Path]:
    """One project per method, each with one model per target (source bench.pb_src_<model>)."""
    projects = {}
    for method, materialization in METHODS.items():
        proj = root / method
        (proj / "models").mkdir(parents=True, exist_ok=True)
        (proj / "dbt_project.yml").write_text(yaml.safe_dump({
            "name": f"pipeline_{method}", "version": "0.1.0", "config-version": 2,
            "profile": "pipeline", "model-paths": ["models"],
        }))
        (proj / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(REPO)}]}))
        if method == "floor":
            (proj / "macros").mkdir(exist_ok=True)
            (proj / "macros" / "checked_merge.sql").write_text(FLOOR_MATERIALIZATION)
        output = {"type": "spark", "method": "session", "host": "NA", "schema": "bench",
                  "threads": threads, "server_side_parameters": SPARK_CONF}
        (proj / "profiles.yml").write_text(yaml.safe_dump(
            {"pipeline": {"target": "spark", "outputs": {"spark": output}}}))
        for i, name in enumerate(model_names(models)):
            props = KINDS[kind_of(i)]
            tbl = f", tblproperties={json.dumps(props)}" if props else ""
            (proj / "models" / f"{name}.sql").write_text(
                f"{{{{ config({materialization}, unique_key='id', file_format='iceberg', "
                f"alias='pb_{method}_{name}'{tbl}) }}}}\n"
                f"select * from bench.pb_src_{name}\n")
        projects[method] = proj
    return projects


def statement_kind(sql: str) -> str:
    """A statement's kind as the profile groups them: its first words, comments left out."""
    text = re.sub(r"/\*.*?\*/|--[^\n]*", " ", sql, flags=re.S).split()
    words = [w.lower() for w in text[:4]]
    if not words:
        return "(empty)"
    if words[0] in ("select", "with"):
        return "select"
    if words[:2] == ["create", "or"] and "view" in " ".join(words + text[4:6]).lower():
        return "create view"
    if words[0] in ("set", "reset"):
        return f"{words[0]} {words[1] if len(words) > 1 else ''}".strip()
    return " ".join(words[:2])


class Profile:
    """The time of every statement dbt runs in this process, by kind, from start() to close(): the
    adapter's `execute` (sending, running and reading the rows), and each model's span from
    dbt's NodeStart and NodeFinished events."""

    def __init__(self) -> None:
        self.seconds: collections.Counter = collections.Counter()
        self.count: collections.Counter = collections.Counter()
        self.started: dict[str, float] = {}
        self.models = 0.0

    def start(self) -> None:
        from dbt.adapters.spark.connections import SparkConnectionManager

        self._class, self._original = SparkConnectionManager, SparkConnectionManager.execute
        original, profile = self._original, self

        def execute(manager, sql, *args, **kwargs):
            started = time.perf_counter()
            try:
                return original(manager, sql, *args, **kwargs)
            finally:
                # outside every model: dbt's own (its relation cache, the schemas)
                kind = statement_kind(sql) if profile.started else "(dbt, outside the models)"
                profile.seconds[kind] += time.perf_counter() - started
                profile.count[kind] += 1

        SparkConnectionManager.execute = execute

    def event(self, event) -> None:
        name = event.info.name
        if name in ("NodeStart", "NodeFinished"):
            node = event.data.node_info.unique_id
            if name == "NodeStart":
                self.started[node] = time.perf_counter()
            elif node in self.started:
                self.models += time.perf_counter() - self.started.pop(node)

    def close(self) -> None:
        self._class.execute = self._original

    def lines(self, method: str, runs: int, models: int) -> list[str]:
        per = runs * models
        outside = "(dbt, outside the models)"
        statements = sum(s for kind, s in self.seconds.items() if kind != outside)
        rows = [f"| {kind} | {self.count[kind] / per:.1f} | {1000 * s / per:.0f} |"
                for kind, s in self.seconds.most_common()]
        return [
            f"{method}: per model, {runs} runs of {models} models",
            "",
            "| statement | count | ms |",
            "|---|---:|---:|",
            *rows,
            f"| every statement of the model | "
            f"{sum(n for k, n in self.count.items() if k != outside) / per:.1f} | "
            f"{1000 * statements / per:.0f} |",
            f"| the rest of the model (dbt, macros) | | "
            f"{1000 * (self.models - statements) / per:.0f} |",
            f"| the model | | {1000 * self.models / per:.0f} |",
            "",
        ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--rows", type=int, default=200_000, help="rows of each target")
    parser.add_argument("--increment", type=int, default=1_000, help="rows of an increment")
    parser.add_argument("--empty", type=int, default=5,
                        help="every N-th model has an empty increment (0: none)")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path, help="folder for results.md and runs.json")
    parser.add_argument("--profile", action="store_true",
                        help="where each method's timed runs spent their time, per model")
    args = parser.parse_args(argv)
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    os.environ.setdefault("SPARK_STATE_DIR", str(Path(tempfile.mkdtemp()) / "spark"))

    root = Path(tempfile.mkdtemp(prefix="project_bench_"))
    projects = write_projects(root, args.models, args.threads)
    from dbt_merge.spark.profile import load_target, spark_conf

    from .engines import Spark

    dbt = {method: DbtProject(proj, "spark") for method, proj in projects.items()}
    engine = Spark(spark_conf(load_target(projects["ours"], "pipeline", "spark")))
    pristine = data.target_table(args.rows)
    if not engine.target_exists(pristine):
        engine.create_target(pristine, data.target_select("spark", args.rows))
    names = model_names(args.models)
    expected = {}
    inc = data.Increment(args.rows, args.increment)
    for i, name in enumerate(names):
        empty = is_empty(i, args.empty)
        select = (data.target_select("spark", 0) if empty
                  else data.increment_select("spark", inc))
        engine.execute(f"drop table if exists bench.pb_src_{name}")
        engine.create_table(f"pb_src_{name}", select)
        expected[name] = args.rows + (0 if empty else args.increment - inc.matched)
    for project in dbt.values():
        project.deps()

    def restore(method: str) -> None:
        for i, name in enumerate(names):
            engine.restore(f"pb_{method}_{name}", pristine, KINDS[kind_of(i)])

    profiles: dict[str, Profile] = {}

    def run(method: str, profile: Profile | None = None) -> float:
        restore(method)
        started = time.perf_counter()
        res = dbt[method].invoke(["run", "--threads", str(args.threads)],
                                 callbacks=[profile.event] if profile else None)
        seconds = time.perf_counter() - started
        results = list(getattr(res.result, "results", None) or [])
        failed = [r.node.name for r in results if str(r.status) != "success"]
        if not res.success or failed or len(results) != len(names):
            raise RuntimeError(f"{method}: dbt run failed ({failed or res.exception})")
        for name in names:
            rows = engine.query(f"select count(*) from bench.pb_{method}_{name}")[0]
            if rows != expected[name]:
                raise RuntimeError(f"{method} {name}: {rows} rows, expected {expected[name]}")
        return seconds

    for method in METHODS:  # one untimed run each: the tables exist, the JVM is warm
        run(method)
    times: dict[str, list[float]] = {m: [] for m in METHODS}
    for _ in range(args.reps):
        for method in METHODS:
            profile = None
            if args.profile:
                profile = profiles[method] = profiles.get(method) or Profile()
                profile.start()
            try:
                times[method].append(run(method, profile))
            finally:
                if profile:
                    profile.close()
            print(f"{method}: {times[method][-1]:.2f} s", flush=True)
    ours, theirs, floor = (statistics.median(times[m]) for m in METHODS)
    empties = sum(is_empty(i, args.empty) for i in range(args.models))
    lines = [
        f"{args.models} models ({args.models - empties} increments of {args.increment} rows, "
        f"{empties} empty) into {args.rows}-row Iceberg tables (copy-on-write, merge-on-read, "
        f"format 3 in turn), one `dbt run --threads {args.threads}`, wall time, median of "
        f"{args.reps}:",
        "",
        "| method | seconds | runs | ratio |",
        "|---|---:|---|---:|",
        f"| ours (`merge`, upsert) | {ours:.1f} | "
        f"{', '.join(f'{t:.1f}' for t in times['ours'])} | {ours / theirs:.2f}x |",
        f"| dbt-spark `merge` | {theirs:.1f} | "
        f"{', '.join(f'{t:.1f}' for t in times['dbt_spark'])} | 1.00x |",
        f"| the floor: checked and counted, hand-written (`checked_merge`) | {floor:.1f} | "
        f"{', '.join(f'{t:.1f}' for t in times['floor'])} | {floor / theirs:.2f}x |",
    ]
    if args.profile:
        lines += ["", f"Where the time went (`--profile`, --threads {args.threads}):", ""]
        for method, profile in profiles.items():
            lines += profile.lines(method, args.reps, args.models)
    print("\n".join(lines))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.md").write_text("\n".join(lines) + "\n")
        (args.out / "runs.json").write_text(json.dumps({"args": {
            k: str(v) for k, v in vars(args).items()}, "times": times}, indent=1))
    engine.spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
