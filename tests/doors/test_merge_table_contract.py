"""The door contract of merge_table (dbt_merge.duckdb): every scenario of tests/doors/dimensions.py
(hypothesis draws them: name forms x object kinds x the caller's objects x dry run), plus the
cases issue 30 saw, each on a connection of its own.

What DuckDB itself reads for the name (the rows of `select * from <name>`, matched to the objects
staged) decides what the door must do:
- a table of a writable database: merged there, rows and statistics those of the reference
  model (tests/reliability/reference.py), the table's definition kept;
- nothing (no object where DuckDB looks) in an existing schema of a writable database: created
  there with the source's rows, every one counted inserted;
- anything else (a view, a temporary table or view, a registered Arrow table, a read-only
  database, a missing schema, text that is not one table name), a transaction open, another
  thread inside a call: refused, the message naming the target and what was found;
- dry_run=True: the statistics, and nothing written anywhere;
and in every case the connection is otherwise exactly as it was (every table and its rows, views,
schemas, databases, sequences, settings, the search path, the caller's transaction).
"""

from __future__ import annotations

import os

import duckdb
import pyarrow as pa
import pytest
from dbt_merge.duckdb import MergeError, merge_table
from reliability.reference import Options, canonical, merge
from suite_summary import record_cases

from .dimensions import Place, Scenario, differences, draw_scenarios, snapshot, stage

DRAWN = 60  # scenarios hypothesis draws (the same ones every run; DBT_MERGE_PROFILE=long: others)
SOURCE = [(2, "o1", 102), (3, "n3", 1003), (4, "n4", 1004)]
NAMES = ("id", "name", "v")
REFUSALS = {  # what the message says, by what the name reads
    "not a name": "it is not the name of one table",
    "view": "it names a view",
    "temporary table": "it names a temporary table of this connection",
    "temporary view": "it names a temporary view of this connection",
    "read-only database": "which is attached read-only",
    "missing schema": "does not exist. Create it first",
    "open transaction": "the connection has a transaction open",
    "another thread": "another thread is using this connection",
}

#: The cases issue 30 saw (and their kin), besides the drawn ones.
ISSUE = [
    Scenario("my.t", "one part", "nothing", "table of that name in another schema",
             ("quoted",) * 3, None, False, "upsert", "arrow", schema="main"),
    Scenario("t", "two parts", "table", "none", ("plain",) * 3, None, False, "upsert", "arrow",
             schema="my"),  # the table my.t, beside a table named "my.t" (below)
    Scenario('say "hi"', "one part", "nothing", "none", ("quoted",) * 3, None, False, "upsert",
             "arrow", schema="main"),
    Scenario("say", "one part", "nothing", "none", ("plain",) * 3, ' "hi"', False, "upsert",
             "arrow", schema="main"),
    Scenario("t", "one part", "table", "temporary table of that name", ("plain",) * 3, None,
             False, "upsert", "arrow", schema="main"),
    Scenario("v", "two parts", "view", "none", ("plain",) * 3, None, False, "upsert", "sql"),
    Scenario("t", "two parts main", "temporary view", "none", ("plain",) * 3, None, True,
             "upsert", "arrow", schema="main", database="temp"),
    Scenario("odd-name", "three parts", "table", "registered Arrow table of that name",
             ("quoted",) * 3, None, False, "full_merge", "relation", schema="My.Schema",
             database="db2"),
    Scenario("ünï", "one part after USE", "nothing", "open transaction", ("plain",) * 3, None,
             False, "upsert", "arrow", schema="ß s"),
    Scenario("t", "three parts", "read-only database", "none", ("plain",) * 3, None, False,
             "upsert", "arrow", schema="main", database="ro"),
    Scenario("t", "two parts", "missing schema", "another thread", ("plain",) * 3, None, True,
             "upsert", "arrow", schema="nowhere"),
]


def _source(con, kind: str):
    if kind == "arrow":
        return pa.table({n: [r[i] for r in SOURCE] for i, n in enumerate(NAMES)})
    sql = ("select * from (values " + ", ".join(f"({a}::bigint, '{b}', {c}::bigint)"
                                                 for a, b, c in SOURCE) + ") as s(id, name, v)")
    return con.sql(sql) if kind == "relation" else sql


def _expected(scenario: Scenario, staged) -> tuple[str, Place | None, list[tuple] | None]:
    """("merge", place, target rows or None for a new table) or ("refuse", what, None)."""
    if scenario.junk is not None:
        return "refuse", "not a name", None
    if staged.reads is not None:
        place, kind = staged.reads
        if kind == "table" and place.database == "ro":
            kind = "read-only database"
        target = staged.objects[place][1]
    else:
        place, kind, target = scenario.place, scenario.kind, None
        if kind not in ("missing schema", "read-only database"):
            kind = "table"
    if kind != "table":
        return "refuse", kind, None
    if scenario.caller in ("open transaction", "another thread"):
        return "refuse", scenario.caller, None
    return "merge", place, target


def check(scenario: Scenario, folder) -> str | None:
    """Run one scenario; what is wrong, or None."""
    con = duckdb.connect()
    try:
        if scenario is ISSUE[1]:
            con.execute('create table main."my.t" (id bigint, name varchar, v bigint)')
        source = _source(con, scenario.source_kind)
        staged = stage(con, scenario, folder)
        what, place, target = _expected(scenario, staged)
        options = {"dry_run": scenario.dry_run}
        if scenario.strategy == "full_merge":
            options["max_delete_fraction"] = 1
        try:
            result, error = merge_table(con, source, scenario.text, "id", scenario.strategy,
                                        **options), None
        except MergeError as e:
            result, error = None, str(e)
        except Exception as e:  # noqa: BLE001 - anything else is a finding, reported
            result, error = None, f"{type(e).__name__} (not MergeError): {e}"
        finally:
            staged.release()
        after = snapshot(con)
        if what == "refuse":
            prefix = f"dbt_merge: table '{scenario.text.strip()}': "
            if error is None:
                return f"not refused ({place}): {result}"
            allowed = [REFUSALS[place]] + ([REFUSALS["another thread"]]
                                           if scenario.caller == "another thread" else [])
            if not error.startswith(prefix) or not any(a in error for a in allowed):
                return f"refused, but not as {place!r}: {error}"
            changed = differences(staged.before, after)
            return f"refused, but changed: {changed}" if changed else None
        if error is not None:
            return f"expected a merge into {place}, got: {error}"
        return _check_merge(scenario, staged, after, place, target, result)
    finally:
        con.close()  # rolls back a transaction left open


def _check_merge(scenario, staged, after, place, target, result) -> str | None:
    source = [dict(zip(NAMES, r, strict=True)) for r in SOURCE]
    rows = None if target is None else [dict(zip(NAMES, r, strict=True)) for r in target]
    expected_rows, stats = merge(scenario.strategy, source, rows, ["id"],
                                 Options(max_delete_fraction=1 if scenario.strategy == "full_merge"
                                         else None))
    want = stats.as_dict() | ({"dry_run": True} if scenario.dry_run else {})
    if result.as_dict() != want:
        return f"statistics {result.as_dict()} != {want}"
    key = (place.database, place.schema, place.identifier)
    before_tables = dict(staged.before["tables"])
    after_tables = dict(after["tables"])
    got = after_tables.pop(key, None)
    had = before_tables.pop(key, None)
    if scenario.dry_run:
        if got != had:
            return f"a dry run changed {key}: {had} -> {got}"
    else:
        if got is None:
            return f"no table at {key}"
        got_rows = [dict(zip(NAMES, r, strict=True)) for r in got[1]]
        if canonical(got_rows, list(NAMES)) != canonical(expected_rows, list(NAMES)):
            return f"rows at {key}: {got[1]} != {expected_rows}"
        if had is not None and had[0] != got[0]:
            return f"the definition of {key} changed: {had[0]} -> {got[0]}"
    changed = differences({**staged.before, "tables": before_tables},
                          {**after, "tables": after_tables})
    return f"merged, but also changed: {changed}" if changed else None


def test_issue_cases(tmp_path):
    failures = [f"{s.describe()}: {p}" for s in ISSUE if (p := check(s, tmp_path))]
    record_cases(len(ISSUE), len(failures))
    assert not failures, "\n".join(failures)


def test_drawn_scenarios(tmp_path):
    profile = "doors_long" if os.environ.get("DBT_MERGE_PROFILE") == "long" else "doors"
    drawn = draw_scenarios(DRAWN, profile)
    failures = [f"{s.describe()}: {p}" for s in drawn if (p := check(s, tmp_path))]
    record_cases(len(drawn), len(failures))
    assert not failures, f"{len(failures)} of {len(drawn)}:\n" + "\n".join(failures)


def test_the_drawn_scenarios_meet_every_dimension():
    """The draw reaches every name form, kind, caller's object, refusal and dry run."""
    drawn = draw_scenarios(DRAWN)
    from .dimensions import CALLERS, KINDS, NAME_FORMS

    assert {s.form for s in drawn} == set(NAME_FORMS)
    assert {s.kind for s in drawn} == set(KINDS)
    assert {s.caller for s in drawn} == set(CALLERS)
    assert any(s.junk for s in drawn) and {s.dry_run for s in drawn} == {True, False}
    assert {s.source_kind for s in drawn} == {"arrow", "sql", "relation"}
    decoys = ("none", "table of that name in another schema",
              "table of that name in another database")
    assert sum(s.junk is None and s.kind in ("table", "nothing") and s.caller in decoys
               for s in drawn) >= 10, "too few merges"


@pytest.fixture(autouse=True)
def _no_stray_files(tmp_path):
    yield
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith("ro_")]
