"""The floor of a validated, counted merge: hand-written formulations on a raw connection
(DuckDB, or Spark with `--engine spark` / `spark_thrift`: see SPARK below).

Issue 12 asks what our checks and counts must cost at the least. This times, in one process and
alternating, on the benchmark's data (a 10M-row file-backed target, an increment of the given
size), each followed by COMMIT:

- `bare`: delete where key in (source), insert the source (no checks, no counts);
- `classify-then-write`: today's shape: the source check, a join of source and target into a
  changes table (key, action), a count over it, then delete and insert from it;
- `count-then-write/always`: the least a validated merge that rewrites every matched row can do:
  the source check, a count of the source keys the target holds (the matched keys: with the
  delete's row count it shows a target key held twice), then the bare delete and insert;
- `write-first`: the source check, then a DELETE whose RETURNING keys are counted by the same
  statement (DuckDB runs DML inside a CTE), then the INSERT, whose row count is the statement's
  result: the counts come from the writes; a target key held twice shows as deleted rows >
  deleted keys. `write-first/changed` deletes only matched rows that differ (every column, or
  `updated_at` only) and inserts the source rows whose key the target no longer holds.

    python -m benchmarks.floor --target 10000000 --rows 1000000 --reps 5

Times are wall seconds of the statements (the commit included), medians; the ratio is to `bare`
of the same rep. It runs no dbt: dbt's per-statement cost comes on top (see benchmarks.profile).

SPARK (issue 22): the same question on Spark + Iceberg, raw Spark SQL on the benchmark's own
engines (benchmarks/engines.py: the session of this process, local[2], or a PyHive connection
to the benchmark's cluster), target restored to its pristine snapshot before each formulation
(untimed), ratios to `MERGE` (the plain MERGE dbt-spark's `merge` runs):

- `MERGE`: `WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *`;
- `MERGE skip-unchanged`: the same, `WHEN MATCHED AND <a column differs> THEN UPDATE`;
- `MERGE of the changed rows`: a MERGE whose source is the source rows new or changed (a join
  of source and target in the MERGE's source: unchanged rows never reach the MERGE); `(cached)`:
  those rows cached (an eager `cache table`) before the MERGE reads them;
- `source check`: rows, distinct keys and NULL keys of the source (one query);
- `classify`: source LEFT JOIN target, rows counted by action (insert / update / unchanged);
- `count`: the package's count of an increment (target LEFT JOIN source, the source broadcast,
  the matched keys counted distinct); `count + files`: the same, with estimates of the target's
  files and of those holding a matched row (a MERGE touching nearly every file then skips its
  runtime file filter);
- `check+classify`: both in one pass, the source's counts riding on the join;
- `separate passes`: source check, classify, MERGE skip-unchanged (the floor of today's shape);
- `one pass + MERGE`: check+classify, then MERGE skip-unchanged (the floor issue 22 aims at);
- with `--dataframe` (session only): `merge_dataframe` (adapter/dbt_merge/spark/api.py) of a
  DataFrame over the source, a hand-written MERGE INTO from a temp view of the same DataFrame,
  and the dbt model of the same merge (ours_upsert of the benchmark project, run in-process:
  wall seconds of dbt's whole run, and dbt's timing of its execute phase).

    python -m benchmarks.floor --engine spark --shape snapshot --reps 3 [--mor] [--dataframe]
    python -m benchmarks.floor --engine spark --rows 200000 --reps 3
    python -m benchmarks.floor --engine spark_thrift --shape snapshot --mor --reps 3

On Spark --target defaults to 2M rows; a `snapshot` or `changed` source has the target's rows.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from . import data

KEY = data.KEY
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
NON_KEY = [c for c in data.COLUMNS if c != KEY]
COLS = ", ".join(data.COLUMNS)


def _differs(columns: list[str]) -> str:
    return "(" + " or ".join(f"t.{c} is distinct from s.{c}" for c in columns) + ")"


def source_check(s: str) -> list[str]:
    """The package's source check for one integer key: bounds, then NULLs and a bitmap count."""
    return [
        f"select min({KEY}), max({KEY}), count({KEY}), count(*) from {s}",
        f"select sum(case when {KEY} is null then 1 else 0 end), count({KEY}) - "
        f"bit_count(bitstring_agg({KEY}, {{lo}}, {{hi}})) from {s}",
    ]


def _classify_then_write(t: str, s: str, changed: str, every_row: bool) -> list[str]:
    """Today's shape: the source check, the changes (key, action) of the matched keys, their
    count (a target key held twice: rows > keys), then delete the updated rows and insert the
    source rows (all, or those not left unchanged when some are)."""
    insert = f"insert into {t} select * from {s}"
    if not every_row:
        insert += (
            f" as s where not exists (select 1 from chg where chg.{KEY} = s.{KEY} and a = 'N')"
        )
    return [
        *source_check(s),
        f"create or replace temp table chg as select s.{KEY}, case when {changed} then 'U' "
        f"else 'N' end as a from {s} as s join {t} as t on t.{KEY} = s.{KEY}",
        "select count(*) filter (a = 'U'), count(*) filter (a = 'N'), count(*), "
        f"bit_count(bitstring_agg({KEY}, {{lo}}, {{hi}})) from chg",
        f"delete from {t} as t where exists (select 1 from chg where chg.{KEY} = t.{KEY} "
        "and a = 'U')",
        insert,
        "drop table chg",
    ]


def formulations(t: str, s: str, shape: str = "increment") -> dict[str, list[str]]:
    """Each formulation's statements; `shape` "increment" has no matched row left unchanged."""
    every = _differs(NON_KEY)
    newer = _differs(["updated_at"])
    all_new = shape == "increment"
    return {
        "bare": [
            f"delete from {t} where {KEY} in (select {KEY} from {s})",
            f"insert into {t} select * from {s}",
        ],
        "classify-then-write": _classify_then_write(t, s, every, all_new),
        "classify-then-write/updated_at": _classify_then_write(t, s, newer, all_new),
        "classify-then-write/always": _classify_then_write(t, s, "true", True),
        "count-then-write/always": [
            *source_check(s),
            f"select count(*) from {s} where {KEY} in (select {KEY} from {t})",
            f"delete from {t} where {KEY} in (select {KEY} from {s})",
            f"insert into {t} select * from {s}",
        ],
        "write-first/always": [
            *source_check(s),
            f"with d as (delete from {t} where {KEY} in (select {KEY} from {s}) returning {KEY}) "
            f"select count(*), count(distinct {KEY}) from d",
            f"insert into {t} select * from {s}",
        ],
        "write-first/changed": [
            *source_check(s),
            f"with d as (delete from {t} as t using {s} as s where t.{KEY} = s.{KEY} and {every} "
            f"returning t.{KEY}) select count(*), count(distinct {KEY}) from d",
            f"insert into {t} select * from {s} as s where not exists "
            f"(select 1 from {t} as t where t.{KEY} = s.{KEY})",
        ],
        "write-first/updated_at": [
            *source_check(s),
            f"with d as (delete from {t} as t using {s} as s where t.{KEY} = s.{KEY} and {newer} "
            f"returning t.{KEY}) select count(*), count(distinct {KEY}) from d",
            f"insert into {t} select * from {s} as s where not exists "
            f"(select 1 from {t} as t where t.{KEY} = s.{KEY})",
        ],
    }


def run(con, statements: list[str], steps: list[float] | None = None) -> float:
    """Run the statements and COMMIT in one transaction; seconds. `steps` gets each statement's
    seconds, the commit's last."""
    bounds = None
    started = time.perf_counter()
    con.execute("begin")
    for sql in [*statements, "commit"]:
        if "{lo}" in sql:
            sql = sql.format(lo=bounds[0], hi=bounds[1])
        t0 = time.perf_counter()
        row = con.execute(sql).fetchall() if sql != "commit" else con.execute(sql)
        if steps is not None:
            steps.append(time.perf_counter() - t0)
        if sql.startswith("select min("):
            bounds = row[0]
    return time.perf_counter() - started


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engine", choices=["duckdb", "spark", "spark_thrift"], default="duckdb")
    p.add_argument("--target", type=int, help="target rows (10M on DuckDB, 2M on Spark)")
    p.add_argument("--rows", type=int, help="increment rows (1M on DuckDB, 200k on Spark)")
    p.add_argument("--shape", default="increment")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--only", default="", help="comma-separated formulation names")
    p.add_argument("--mor", action="store_true", help="Spark: a merge-on-read Iceberg target")
    p.add_argument("--v3", action="store_true", help="Spark: an Iceberg target of format v3")
    p.add_argument(
        "--extensions", action="store_true",
        help="Spark session: Iceberg's SQL extensions on (the branch formulations need them)",
    )
    p.add_argument(
        "--dataframe", action="store_true", help="Spark session: also merge_dataframe (SPARK)"
    )
    a = p.parse_args()
    if a.engine != "duckdb":
        spark_main(a)
        return
    a.target, a.rows = a.target or 10_000_000, a.rows or 1_000_000
    inc = data.Increment(a.target, a.rows, shape=a.shape)
    folder = Path(tempfile.mkdtemp(prefix="dbt_merge_floor_"))
    con = duckdb.connect(str(folder / "floor.duckdb"))
    con.execute(f"create table pristine as {data.target_select('duckdb', a.target)}")
    con.execute(f"create table src as {data.increment_select('duckdb', inc)}")
    con.execute("checkpoint")
    names = [n for n in formulations("t", "src", a.shape) if not a.only or n in a.only.split(",")]
    if "bare" not in names:
        names.insert(0, "bare")
    times: dict[str, list[float]] = {n: [] for n in names}
    steps: dict[str, list[list[float]]] = {n: [] for n in names}
    ratios: dict[str, list[float]] = {n: [] for n in names}
    for rep in range(a.reps + 1):
        order = names if rep % 2 == 0 else names[::-1]
        this: dict[str, float] = {}
        for name in order:
            con.execute("create or replace table t as select * from pristine")
            con.execute("checkpoint")
            steps[name].append([])
            this[name] = run(con, formulations("t", "src", a.shape)[name], steps[name][-1])
        if rep == 0:
            continue  # warm-up
        for name in names:
            times[name].append(this[name])
            ratios[name].append(this[name] / this["bare"])
    print(
        f"{inc.label}: {a.reps} reps after one warm-up; seconds, median (min-max); "
        "ratio to bare of the same rep, median"
    )
    for name in names:
        xs = times[name]
        print(
            f"  {name:24s} {statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"
            f"  {statistics.median(ratios[name]):.2f}x"
        )
        per = [statistics.median(s[i] for s in steps[name][1:]) for i in range(len(steps[name][0]))]
        print("    per statement (the commit last): " + ", ".join(f"{x:.3f}" for x in per))


# ------------------------------------------------------------------------------------- Spark


def spark_formulations(t: str, s: str) -> dict[str, list[str]]:
    """The Spark formulations (module docstring, SPARK): target t, source s."""
    cols = ", ".join(data.COLUMNS)
    values = ", ".join(f"s.{c}" for c in data.COLUMNS)
    set_all = ", ".join(f"{c} = s.{c}" for c in NON_KEY)
    differs = " or ".join(f"not (t.{c} <=> s.{c})" for c in NON_KEY)
    merge = f"merge into {t} as t using {s} as s on t.{KEY} = s.{KEY} when matched"
    insert = f" when not matched then insert ({cols}) values ({values})"
    plain = f"{merge} then update set {set_all}{insert}"
    skip = f"{merge} and ({differs}) then update set {set_all}{insert}"
    check = f"select count(*), count(distinct {KEY}), count_if({KEY} is null) from {s}"
    actions = (
        f"count_if(t.{KEY} is null) as inserted, "
        f"count_if(t.{KEY} is not null and ({differs})) as updated, "
        f"count_if(t.{KEY} is not null and not ({differs})) as unchanged"
    )
    classify = f"select {actions} from {s} as s left join {t} as t on t.{KEY} = s.{KEY}"
    both = (
        f"select count(*), count(distinct s.{KEY}), count_if(s.{KEY} is null), {actions} "
        f"from {s} as s left join {t} as t on t.{KEY} = s.{KEY}"
    )
    changed_rows = (
        f"(select s.* from {s} as s left join {t} as t on t.{KEY} = s.{KEY}"
        f" where t.{KEY} is null or ({differs}))"
    )
    filtered = (
        f"merge into {t} as t using {changed_rows} as s on t.{KEY} = s.{KEY} when matched then "
        f"update set {set_all}{insert}"
    )
    cached = [
        f"create or replace temporary view floor_changed as {changed_rows[1:-1]}",
        "cache table floor_changed",
        filtered.replace(changed_rows, "floor_changed"),
        "uncache table floor_changed",
        "drop view floor_changed",
    ]
    # today's shape of our MERGE (issue 22): the SELECT staged as a lazily cached view, its
    # columns uncompressed (cache_lazy; round 10's first runs used Spark's compressed default),
    # that the source check fills, the MERGE skipping unchanged rows from it, its source rows
    # passed through a scalar-subquery guard on the table's `main` reference (snapshot_guard_sql)
    guard = (
        f"case when (select count(*) from {t}.refs where name = 'main') = 1 "
        "then true else raise_error('moved') end"
    )
    staged = [
        f"create or replace temporary view floor_src as select * from {s}",
        "set spark.sql.inMemoryColumnarStorage.compressed=false",
        "cache lazy table floor_src",
        "set spark.sql.inMemoryColumnarStorage.compressed=true",
        check.replace(s, "floor_src"),
    ]
    unstage = ["uncache table floor_src", "drop view floor_src"]
    skip_staged = skip.replace(f"using {s} as s", "using floor_src as s")
    skip_guarded = skip.replace(
        f"using {s} as s", f"using (select * from floor_src where {guard}) as s"
    )
    # a copy-on-write MERGE with a WHEN NOT MATCHED BY SOURCE clause skips the runtime filter
    # that first joins source and target to find the files to rewrite (it rewrites every file);
    # with a condition that is never true the clause changes nothing
    no_filter = " when not matched by source and false then delete"
    # the package's count of an increment (spark__count_changes, left-join form): every target
    # row, the source broadcast; the distinct matched keys show a key the target holds twice.
    # `+ files` also estimates the target's files and those holding a matched row (the MERGE
    # then skips its runtime file filter when the matched rows are in nearly every file)
    count = (
        f"select count_if(s.{KEY} is not null and ({differs})) as updated, "
        f"count_if(s.{KEY} is not null and not ({differs})) as unchanged, count(*) as target_rows, "
        f"count(distinct case when s.{KEY} is not null then s.{KEY} end) as matched_keys"
    )
    count_from = f" from {t} as t left join {s} as s on t.{KEY} = s.{KEY}"
    files = (
        f", size(collect_set(case when s.{KEY} is not null then xxhash64(t._file) end)), "
        "size(collect_set(xxhash64(t._file)))"
    )
    # the count of a snapshot (spark__count_changes, full-join form) over the staged SELECT,
    # after the source check; `one pass`: the check without its count(distinct), the key tests
    # riding on the count's join instead (a source key repeated among the matched rows makes
    # the target's rows in the join more than the table's; among the new rows, a distinct over
    # those rows only)
    joined = (
        f"select s.{KEY} as sid, case when s.{KEY} is not null and t.{KEY} is null then 1 else 0 "
        f"end as so, case when s.{KEY} is null or t.{KEY} is null then null when ({differs}) "
        f"then 'U' else 'N' end as a from {t} as t full outer join floor_src as s "
        f"on t.{KEY} = s.{KEY}"
    )
    fj_count = (
        "select count_if(a = 'U'), count_if(a = 'N'), count(*) - sum(so), sum(so) "
        f"from ({joined}) as j"
    )
    fj_one_pass = (
        "select count_if(a = 'U'), count_if(a = 'N'), count(*) - sum(so), sum(so), "
        f"count(distinct case when so = 1 then sid end), (select count(*) from {t}) "
        f"from ({joined}) as j"
    )
    light = staged[:-1] + [f"select count(*), count_if({KEY} is null) from floor_src"]
    # write once, count from the commit (issue 32; Iceberg SQL extensions, `--extensions`): the
    # MERGE skipping unchanged rows into a branch of the run, from the staged SELECT cached
    # lazily (the MERGE fills it), its source's keys tested inside the statement (a NULL key, a
    # key repeated: raise_error over a window count by key), then the source's rows counted from
    # the cache, the commit's summary read, main fast-forwarded to the branch, the branch
    # dropped. `+ held twice`: the source also joined to the target's keys held more than once
    # among the source's keys (a target key held twice fails the MERGE)
    branch = f"{t}.branch_floor_run"
    keyed = (
        f"(select * from (select *, count(*) over (partition by {KEY}) as dbt_n from floor_src)"
        f" where case when dbt_n > 1 or {KEY} is null then raise_error('bad key') else true end)"
    )
    twice = (
        f"(select s.* from {keyed} as s left join (select {KEY} as dbt_k from {t} where "
        f"{KEY} in (select {KEY} from floor_src) group by {KEY} having count(*) > 1) as d "
        f"on d.dbt_k = s.{KEY} where case when d.dbt_k is not null then raise_error('held twice')"
        " else true end)"
    )
    one_merge = skip.replace(f"merge into {t} as t using {s} as s",
                             f"merge into {branch} as t using {keyed} as s")
    summary = (
        f"select summary['added-records'], summary['added-position-deletes'], "
        f"summary['total-records'] from {t}.snapshots where snapshot_id = "
        f"(select snapshot_id from {t}.refs where name = 'floor_run')"
    )
    publish = [
        f"call spark_catalog.system.fast_forward('{t}', 'main', 'floor_run')",
        f"alter table {t} drop branch floor_run",
    ]
    one_pass = (staged[:-1] + [f"alter table {t} create branch floor_run", one_merge,
                               "select count(*) from floor_src", summary] + publish + unstage)
    # the same, the checks a pass of their own before the write (today's source check: rows,
    # NULL keys, distinct keys; it fills the cache), with the test of a target key held twice
    # among the source's keys (key columns only) as a scalar subquery of that query; then the
    # MERGE into the branch from the cache. `+ total`: the branch's rows counted (a
    # merge-on-read table's count applies its delete files)
    held = (
        f"(select count(*) from (select {KEY} from {t} where {KEY} in (select {KEY} from "
        f"floor_src) group by {KEY} having count(*) > 1))"
    )
    checked = staged[:-1] + [check.replace(f" from {s}", f", {held} from floor_src")]
    branch_merge = skip.replace(f"merge into {t} as t using {s} as s",
                                f"merge into {branch} as t using floor_src as s")
    check_then_branch = checked + [f"alter table {t} create branch floor_run", branch_merge,
                                   summary] + publish + unstage
    return {
        "check (held twice) + branch MERGE skip": check_then_branch,
        "check (held twice) + branch MERGE skip + total": [
            *check_then_branch[: check_then_branch.index(summary) + 1],
            f"select count(*) from {branch}", *publish, *unstage],
        "check (held twice)": checked + unstage,
        "branch + MERGE skip (checks inside)": one_pass,
        "branch + MERGE skip (checks inside) + held twice": [
            q.replace(keyed, twice) if q == one_merge else q for q in one_pass],
        "branch + MERGE skip (no checks)": [
            f"alter table {t} create branch floor_run",
            skip.replace(f"merge into {t} as t", f"merge into {branch} as t"), summary] + publish,
        "MERGE skip (checks inside)": staged[:-1] + [
            skip.replace(f"using {s} as s", f"using {keyed} as s")] + unstage,
        "staged check + full-join count": staged + [fj_count] + unstage,
        "one pass (check and full-join count)": light + [fj_one_pass] + unstage,
        "MERGE skip-unchanged (no file filter)": [skip + no_filter],
        "MERGE (no file filter)": [plain + no_filter],
        "check + MERGE skip-unchanged": [check, skip],
        "staged check + MERGE skip": staged + [skip_staged] + unstage,
        "staged check + guarded MERGE skip": staged + [skip_guarded] + unstage,
        "MERGE": [plain],
        "MERGE skip-unchanged": [skip],
        "MERGE of the changed rows": [filtered],
        "MERGE of the changed rows (cached)": cached,
        "source check": [check],
        "count": [count + count_from],
        "count + files": [count + files + count_from],
        "classify": [classify],
        "check+classify": [both],
        "separate passes": [check, classify, skip],
        "one pass + MERGE": [both, skip],
    }


def spark_main(a) -> None:
    import os

    from .engines import bench_cluster, open_engine
    from .project import THRIFT_PORT_ENV, write_project

    target = a.target or 2_000_000
    rows = target if a.shape in ("snapshot", "changed") else a.rows or target // 10
    inc = data.Increment(target, rows, shape=a.shape)
    folder = Path(tempfile.mkdtemp(prefix="dbt_merge_floor_spark_"))
    project = folder / f"project_{a.engine}"
    if a.engine == "spark":
        os.environ["SPARK_STATE_DIR"] = str(folder / "spark_state")
        (folder / "spark_state").mkdir()
        extensions = {"spark.sql.extensions": ICEBERG_EXTENSIONS} if a.extensions else None
        write_project(project, "spark", spark_conf=extensions)
        _spark_floor(a, inc, project, open_engine("spark", folder / "x.duckdb", project))
        return
    with bench_cluster(log=lambda m: print(m, flush=True)) as (cluster, _):
        os.environ[THRIFT_PORT_ENV] = str(cluster.thrift_port)
        write_project(project, a.engine)
        engine = open_engine(a.engine, folder / "x.duckdb", project, cluster)
        _spark_floor(a, inc, project, engine)


def _spark_floor(a, inc, project: Path, engine) -> None:
    from .engines import prepare
    from .project import MOR_PROPERTIES, DbtProject

    props = (MOR_PROPERTIES if a.mor else {}) | ({"format-version": "3"} if a.v3 else {}) or None
    pristine = prepare(engine, inc)
    t, s = engine.target_ref("floor_target"), engine.source_ref()
    forms = spark_formulations(t, s)
    names = [n for n in forms if not a.only or n in a.only.split(",")]
    if "MERGE" not in names:
        names.insert(0, "MERGE")
    timed: dict[str, list[float]] = {n: [] for n in names}
    steps: dict[str, list[list[float]]] = {n: [] for n in names}
    extra: dict[str, list[float]] = {}
    df_run = a.dataframe and engine.name == "spark"
    dbt = None
    if df_run:
        from dbt_merge.spark.api import merge_dataframe

        dbt = DbtProject(project, "spark")
        dbt.deps()
        df = engine.spark.table(s)
        extra = {
            n: []
            for n in (
                "merge_dataframe",
                "MERGE INTO from the DataFrame",
                "dbt model (whole run)",
                "dbt model (execute phase)",
            )
        }
    for rep in range(a.reps + 1):
        order = names if rep % 2 == 0 else names[::-1]
        for name in order:
            engine.restore("floor_target", pristine, props)
            per = []
            start = time.perf_counter()
            for sql in forms[name]:
                t0 = time.perf_counter()
                engine.query(sql) if sql.startswith("select") else engine.execute(sql)
                per.append(time.perf_counter() - t0)
            if rep:
                timed[name].append(time.perf_counter() - start)
                steps[name].append(per)
        if df_run:
            engine.restore("floor_df", pristine, props)
            t0 = time.perf_counter()
            result = merge_dataframe(df, engine.target_ref("floor_df"), "id")
            secs = {"merge_dataframe": time.perf_counter() - t0}
            engine.restore("floor_df", pristine, props)
            df.createOrReplaceTempView("floor_df_source")
            t0 = time.perf_counter()
            engine.execute(
                spark_formulations(engine.target_ref("floor_df"), "floor_df_source")["MERGE"][0]
            )
            secs["MERGE INTO from the DataFrame"] = time.perf_counter() - t0
            engine.spark.catalog.dropTempView("floor_df_source")
            model = "ours_upsert_mor" if a.mor else "ours_upsert"
            engine.restore(model, pristine, props)
            t0 = time.perf_counter()
            run = dbt.run(model)
            if run.error:
                raise SystemExit(f"{model}: {run.error}")
            secs["dbt model (whole run)"] = time.perf_counter() - t0
            secs["dbt model (execute phase)"] = run.seconds
            if rep:
                for k, v in secs.items():
                    extra[k].append(v)
            elif rep == 0:
                print(f"merge_dataframe: {result}; dbt: {run.message}")
    print(
        f"Spark ({engine.name}) {inc.label}"
        + (", merge-on-read" if a.mor else "")
        + f": {a.reps} reps after one warm-up; seconds, median (min-max); ratio to MERGE of "
        "the same rep, median"
    )
    for name in names:
        xs = timed[name]
        ratio = statistics.median(x / m for x, m in zip(xs, timed["MERGE"], strict=True))
        print(
            f"  {name:34s} {statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})  {ratio:.2f}x"
        )
        if len(forms[name]) > 1:
            per = [statistics.median(p[i] for p in steps[name]) for i in range(len(forms[name]))]
            print("    per statement: " + ", ".join(f"{x:.3f}" for x in per))
    for name, xs in extra.items():
        ratio = statistics.median(x / m for x, m in zip(xs, timed["MERGE"], strict=True))
        print(
            f"  {name:34s} {statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})  {ratio:.2f}x"
        )


if __name__ == "__main__":
    main()
