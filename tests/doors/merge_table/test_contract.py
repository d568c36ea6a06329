"""The door contract of merge_table (dbt_merge.duckdb): every scenario of tests/doors/dimensions.py
(hypothesis draws them: name forms x object kinds x the caller's objects x dry run), plus the
cases issue 30 saw, each on a connection of its own.

What DuckDB itself reads for the name (the rows of `select * from <name>`, matched to the objects
staged) decides what the door must do:
- a table of a writable database: merged there, rows and statistics those of the reference
  model (tests/support/reference.py), the table's definition kept;
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
import threading

import duckdb
import pyarrow as pa
import pytest
from dbt_merge.duckdb import MergeError, merge_table
from suite_summary import record_cases
from support.reference import Options, canonical, merge

from doors.dimensions import (
    Place,
    Scenario,
    differences,
    draw_scenarios,
    qualified,
    snapshot,
    stage,
)

DRAWN = 60  # scenarios hypothesis draws (the same ones every run; DBT_MERGE_PROFILE=long: others)
#: id 2 corrects the case of a name only ('o1' in the staged objects' rows): an update, also on a
#: connection that would compare text ignoring case
SOURCE = [(2, "O1", 102), (3, "n3", 1003), (4, "n4", 1004)]
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

#: Fixed cases beside the drawn ones: names and objects a door review saw wrongly handled (and
#: their kin), and two cursors merging the same new keys into one table at once.
FIXED_CASES = [
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
    # issue 35: two cursors merging the same new keys into one table at once, and creating it
    Scenario("t", "two parts", "table", "another cursor at once", ("plain",) * 3, None, False,
             "upsert", "arrow", schema="s"),
    Scenario("new_t", "three parts", "nothing", "another cursor at once", ("quoted",) * 3, None,
             False, "full_merge", "sql", schema="x", database="db2"),
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
        if scenario is FIXED_CASES[1]:
            con.execute('create table main."my.t" (id bigint, name varchar, v bigint)')
        source = _source(con, scenario.source_kind)
        staged = stage(con, scenario, folder)
        what, place, target = _expected(scenario, staged)
        options = {"dry_run": scenario.dry_run}
        if scenario.strategy == "full_merge":
            options["max_delete_fraction"] = 1
        at_once = scenario.caller == "another cursor at once"
        if at_once:  # the other cursor's merge, in another thread, released with this one's
            other, barrier = {}, threading.Barrier(2)
            thread = threading.Thread(target=_merge_at_once, args=(
                con, scenario, options, barrier, other))
            thread.start()
            barrier.wait()
        try:
            result, error = merge_table(con, source, scenario.text, "id", scenario.strategy,
                                        **options), None
        except MergeError as e:
            result, error = None, str(e)
        except Exception as e:  # noqa: BLE001 - anything else is a finding, reported
            result, error = None, f"{type(e).__name__} (not MergeError): {e}"
        finally:
            staged.release()
            if at_once:
                thread.join()
        after = snapshot(con)
        if at_once:
            problem = _one_after_the_other(scenario, what, result, error, other)
            if problem is not None:
                return problem
            if what == "merge" and not scenario.dry_run and other.get("result") is not None \
                    and result.as_dict() != _reference(scenario, target)[1]:
                result = other["result"]  # the other cursor's merge came first
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


def _merge_at_once(con, scenario: Scenario, options: dict, barrier, out: dict) -> None:
    """The other cursor's merge of the same source into the same name (the caller `another
    cursor at once`): its result or its error in `out`."""
    cursor = con.cursor()
    try:
        if scenario.form == "one part after USE":  # the caller's session, on this cursor too
            cursor.execute(f"use {qualified(scenario.database, scenario.schema)}")
        source = _source(cursor, scenario.source_kind)
        barrier.wait()
        out["result"] = merge_table(cursor, source, scenario.text, "id", scenario.strategy,
                                    **options)
    except MergeError as e:
        out["error"] = str(e)
    except Exception as e:  # noqa: BLE001 - anything else is a finding, reported
        out["error"] = f"{type(e).__name__} (not MergeError): {e}"
    finally:
        cursor.close()


def _reference(scenario: Scenario, target) -> tuple[list[dict], dict]:
    """The reference merge of SOURCE into `target` (rows or None): (rows, statistics)."""
    source = [dict(zip(NAMES, r, strict=True)) for r in SOURCE]
    rows = None if target is None else [dict(zip(NAMES, r, strict=True)) for r in target]
    expected_rows, stats = merge(scenario.strategy, source, rows, ["id"],
                                 Options(max_delete_fraction=1 if scenario.strategy == "full_merge"
                                         else None))
    return expected_rows, stats.as_dict() | ({"dry_run": True} if scenario.dry_run else {})


def _one_after_the_other(scenario, what, result, error, other) -> str | None:
    """Two merges of one source into one name at once, as if one ran after the other: both
    refused alike, or one merged as the reference says and the other found everything as the
    first left it (a dry run: both as the reference says, nothing written)."""
    if what == "refuse":
        return None if "error" in other else f"the other cursor was not refused: {other}"
    if "error" in other:
        return f"the other cursor's merge failed: {other['error']}"
    if error is not None:
        return None  # reported by the caller's check
    mine, theirs = result.as_dict(), other["result"].as_dict()
    if scenario.dry_run:
        return None if mine == theirs else f"dry runs at once differ: {mine} != {theirs}"
    first = mine if mine.get("inserted") or mine.get("updated") or mine.get("deleted") else theirs
    second = theirs if first is mine else mine
    # the same rows again: each SOURCE row matched and unchanged, the total as the first left it
    again = {"inserted": 0, "updated": 0, "deleted": 0, "unchanged": len(SOURCE),
             "total": first["total"]}
    return None if second == again else f"the second merge at once: {second} != {again}"


def _check_merge(scenario, staged, after, place, target, result) -> str | None:
    expected_rows, want = _reference(scenario, target)
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


def test_fixed_cases(tmp_path):
    failures = [f"{s.describe()}: {p}" for s in FIXED_CASES if (p := check(s, tmp_path))]
    record_cases(len(FIXED_CASES), len(failures))
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
    from doors.dimensions import CALLERS, KINDS, NAME_FORMS

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
