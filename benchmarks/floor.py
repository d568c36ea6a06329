"""The floor of a validated, counted DuckDB merge: hand-written formulations on a raw connection.

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
        insert += (f" as s where not exists (select 1 from chg where chg.{KEY} = s.{KEY}"
                   " and a = 'N')")
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
    p.add_argument("--target", type=int, default=10_000_000)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--shape", default="increment")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--only", default="", help="comma-separated formulation names")
    a = p.parse_args()
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
    print(f"{inc.label}: {a.reps} reps after one warm-up; seconds, median (min-max); "
          "ratio to bare of the same rep, median")
    for name in names:
        xs = times[name]
        print(f"  {name:24s} {statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"
              f"  {statistics.median(ratios[name]):.2f}x")
        per = [statistics.median(s[i] for s in steps[name][1:]) for i in range(len(steps[name][0]))]
        print("    per statement (the commit last): " + ", ".join(f"{x:.3f}" for x in per))


if __name__ == "__main__":
    main()
