"""The door contract of merge_dataframe (dbt_merge.spark), in the process's SparkSession.

What the door promises, whatever the caller throws at it:

- the target is the object the name names, as Spark's own parser and catalog resolve it (a
  dot inside backticks is part of a name; a one-part name is a temporary view first); a table
  (Iceberg or parquet) is merged, nothing yet is created exactly there, and every other kind
  (view, temporary view, global temporary view, a table of another catalog, a missing
  database, a name the metastore cannot store, text that is no table name) is refused with a
  message, everything as it was;
- the caller's objects are the caller's: its cached DataFrame stays cached, its temporary views,
  its tables (those named like the package's work tables included) and its settings are as
  they were, after a merge, a refusal or a dry run;
- the source is read once: what was checked and counted is what is written, even when the
  session writes the source's table or folder, or drops the table it reads, during the merge;
- a dry run writes nothing anywhere;
- MergeResult.snapshot_id is the merge's own commit, whoever commits after it.

Name forms x kinds x caller objects x dry run are generated (hypothesis, a fixed seed); rows and
statistics come from the reference model (tests/support/reference.py).
"""

from __future__ import annotations

import datetime
import hashlib
import itertools
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support.reference import MergeError as RefMergeError
from support.reference import Options as RefOptions
from support.reference import merge as reference_merge

pytestmark = pytest.mark.spark

DB = "door_spark"
OTHER_DB = "door_spark_other"
COLUMNS = "id int, name string, p int"
TARGET = [(1, "a", 1), (2, "b", 1), (3, "c", 2)]
SOURCE = [(1, "a", 1), (2, "B", 2), (4, "d", 2)]
NAMES = ("id", "name", "p")


def expected(strategy: str, source, target):
    """(rows, five statistics) of the reference model."""
    rows, stats = reference_merge(
        strategy,
        [dict(zip(NAMES, r, strict=True)) for r in source],
        None if target is None else [dict(zip(NAMES, r, strict=True)) for r in target],
        ["id"],
        engine="spark",
    )
    return sorted(tuple(r[c] for c in NAMES) for r in rows), stats.as_dict()


def counts(result) -> dict:
    return {k: getattr(result, k) for k in ("inserted", "updated", "deleted", "unchanged", "total")}


@pytest.fixture(scope="module")
def session(spark):
    for db in (DB, OTHER_DB):
        spark.sql(f"create database if not exists {db}")
    yield spark
    for db in (DB, OTHER_DB):
        spark.sql(f"drop database if exists {db} cascade")


def world(spark) -> dict:
    """Everything a call could change that is not its target's rows: the tables of the test
    databases (kind, rows, Iceberg snapshots), the session's temporary views, its settings, the
    cache manager's entries and the SparkContext's persisted RDDs."""
    tables = {}
    for db in (DB, OTHER_DB):
        for t in spark.catalog.listTables(db):
            if t.isTemporary:
                continue
            name = f"`{db}`.`{t.name}`"
            rows = sorted(map(tuple, spark.table(name).collect()), key=repr)
            snaps = None
            if t.tableType != "VIEW":
                props = {r[0]: r[1] for r in spark.sql(f"show tblproperties {name}").collect()}
                snaps = props.get("current-snapshot-id")
            tables[(db, t.name)] = (t.tableType, rows, snaps)
    return {
        "tables": tables,
        "temp_views": sorted(t.name for t in spark.catalog.listTables() if t.isTemporary),
        "conf": {r[0]: r[1] for r in spark.sql("set").collect()},
        "cached": spark._jsparkSession.sharedState().cacheManager().isEmpty(),
        "rdds": sorted(spark.sparkContext._jsc.getPersistentRDDs().keySet().toArray()),
    }


def make_table(spark, name: str, rows=TARGET, fmt: str = "iceberg", partitioned=False) -> None:
    spark.sql(f"drop table if exists {name}")
    part = " partitioned by (p)" if partitioned else ""
    spark.sql(f"create table {name} ({COLUMNS}) using {fmt}{part}")
    if rows:
        spark.createDataFrame(rows, COLUMNS).write.insertInto(name)


def rows_of(spark, name: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.table(name).collect())


# ------------------------------------------------------------------ names and kinds, generated

#: name forms: (the text a caller writes for a table `b` of DB, the name the table gets, whether
#: the session's Hive metastore can store that name: letters, digits and _ only)
FORMS = {
    "plain": (lambda b: f"{DB}.{b}", lambda b: b, True),
    "upper case": (lambda b: f"{DB.upper()}.{b.upper()}", lambda b: b, True),
    "backticks": (lambda b: f"`{DB}`.`{b}`", lambda b: b, True),
    "reserved word": (lambda b: f"{DB}.`select`", lambda b: "select", True),
    "leading digit": (lambda b: f"{DB}.`1{b}`", lambda b: "1" + b, True),
    "catalog and database": (lambda b: f"spark_catalog.{DB}.{b}", lambda b: b, True),
    "one part, current database": (lambda b: b, lambda b: b, True),
    "dot inside backticks": (lambda b: f"{DB}.`we.{b}`", lambda b: f"we.{b}", False),
    "dash": (lambda b: f"{DB}.`{b}-x`", lambda b: f"{b}-x", False),
    "unicode": (lambda b: f"{DB}.`tête_{b}`", lambda b: f"tête_{b}", False),
}
SERIAL = itertools.count()
#: what is at the name before the call (a temporary view of the table's own name, which a
#: one-part name resolves to first)
KINDS = ("nothing", "iceberg table", "parquet table", "view", "temporary view")


def outcome(form: str, kind: str) -> str | None:
    """The words of the refusal the call must give, or None when it must merge."""
    if not FORMS[form][2]:
        return "letters, digits and _"
    if kind == "view":
        return "is a view"
    if kind == "temporary view" and form == "one part, current database":
        return "temporary view"
    return None


@settings(max_examples=16, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(form=st.sampled_from(sorted(FORMS)), kind=st.sampled_from(KINDS), dry_run=st.booleans(),
       cached_source=st.booleans())
def test_a_name_merges_the_table_it_names_or_nothing(session, form, kind, dry_run,
                                                     cached_source):
    from dbt_merge import MergeError
    from dbt_merge.spark import merge_dataframe

    spark = session
    text_of, name_of, storable = FORMS[form]
    # a new name each example: the session catalog's Iceberg cache may still hold a table of a
    # name just dropped
    base = "g_" + "".join(c for c in form if c.isalnum())[:12].lower() + str(next(SERIAL))
    name = name_of(base)
    table = f"`{DB}`.`{name}`"
    mine = [f"`{OTHER_DB}`.`{base}`", f"`{DB}`.`{base}__dbt_merge_s_0123abcd`"]
    spark.sql(f"use {DB}")
    df = spark.createDataFrame(SOURCE, COLUMNS)
    try:
        # the caller's own objects: a same-named table in another database, a table named like
        # a work table of the package, a temporary view, perhaps a cached DataFrame
        for other in mine:
            make_table(spark, other)
        spark.createDataFrame([(9, "v", 9)], COLUMNS).createOrReplaceTempView("users_view")
        if storable and kind in ("iceberg table", "parquet table"):
            make_table(spark, table, fmt=kind.split()[0])
        elif storable and kind == "view":
            spark.sql(f"create view {table} as select 7 as id, 'v' as name, 7 as p")
        elif kind == "temporary view":
            spark.sql(f"create temporary view `{name}` as select 8 as id, 't' as name, 8 as p")
        if cached_source:
            df.cache().count()
        before = world(spark)
        refusal = outcome(form, kind)
        try:
            result = merge_dataframe(df, text_of(base), key_columns="id", dry_run=dry_run)
        except MergeError as error:
            message = str(error)
            assert refusal is not None, (form, kind, message)
            assert refusal in message and message.startswith("dbt_merge: table '"), message
            assert message.endswith("The target was not changed."), message
            assert world(spark) == before
        else:
            assert refusal is None, (form, kind, "merged", result)
            existed = kind in ("iceberg table", "parquet table")
            rows, stats = expected("upsert", SOURCE, TARGET if existed else None)
            assert counts(result) == stats and result.dry_run is dry_run
            after = world(spark)
            if dry_run:
                assert after == before
            else:
                assert rows_of(spark, table) == rows
                key = (DB, name)
                assert {k: v for k, v in after["tables"].items() if k != key} == {
                    k: v for k, v in before["tables"].items() if k != key}
                assert {k: v for k, v in after.items() if k != "tables"} == {
                    k: v for k, v in before.items() if k != "tables"}
        if cached_source:
            assert df.storageLevel.useMemory, "the caller's cache was dropped"
    finally:
        spark.sql("use default")
        df.unpersist()
        spark.catalog.dropTempView("users_view")
        spark.sql(f"drop view if exists `{name}`")
        for other in mine:
            spark.sql(f"drop table if exists {other}")
        if storable:
            spark.sql(f"drop view if exists {table}" if kind == "view"
                      else f"drop table if exists {table}")


@pytest.mark.parametrize("text, words", [
    ("say hi", "cannot read it as a table name"),
    ("door_spark.t; drop table x", "cannot read it as a table name"),
    ("", "must be a table name"),
    ("a.b.c.d", "name a table as 'database.table' or 'table'"),
    ("global_temp.gv", "global temporary view"),
    ("no_such_db.t", "the database 'no_such_db' does not exist"),
    ("other_cat.door_spark.t", "is in the catalog 'other_cat'"),
])
def test_what_is_not_a_table_of_the_session_catalog_is_refused(session, text, words):
    from dbt_merge import MergeError
    from dbt_merge.spark import merge_dataframe

    spark = session
    spark.createDataFrame([(1, "g", 1)], COLUMNS).createOrReplaceGlobalTempView("gv")
    try:
        df = spark.createDataFrame(SOURCE, COLUMNS)
        before = world(spark)
        with pytest.raises(MergeError) as error:
            merge_dataframe(df, text, key_columns="id")
        assert words in str(error.value)
        assert world(spark) == before
        assert not spark.catalog.databaseExists("no_such_db")
    finally:
        spark.catalog.dropGlobalTempView("gv")


# ------------------------------------------------------------ the caller's objects, one by one

def test_work_tables_are_recognised_by_their_mark_not_their_name(session):
    """Tables the user named like the package's work tables (<t>__dbt_merge_s_*, _w_*) are
    never dropped, by a merge, a dry run or a refused merge; a real leftover the package marked
    is."""
    from dbt_merge import MergeError
    from dbt_merge.spark import merge_dataframe

    spark = session
    target = f"{DB}.wk"
    make_table(spark, target, fmt="parquet")
    mine = [f"{DB}.wk__dbt_merge_s_{'ab' * 8}", f"{DB}.wk__dbt_merge_w_{'cd' * 8}"]
    for name in mine:
        make_table(spark, name, rows=[(5, "mine", 5)], fmt="parquet")
    marked = f"{DB}.wk__dbt_merge_s_{'ef' * 8}"
    make_table(spark, marked, rows=[], fmt="parquet")
    spark.sql(f"alter table {marked} set tblproperties ('dbt_merge.work_for' = 'wk')")
    df = spark.createDataFrame(SOURCE, COLUMNS)
    merge_dataframe(df, target, key_columns="id", dry_run=True)
    assert spark.catalog.tableExists(marked)  # a dry run drops nothing
    with pytest.raises(MergeError):
        merge_dataframe(spark.createDataFrame(SOURCE + SOURCE, COLUMNS), target, key_columns="id")
    result = merge_dataframe(df, target, key_columns="id")
    assert counts(result) == expected("upsert", SOURCE, TARGET)[1]
    for name in mine:
        assert rows_of(spark, name) == [(5, "mine", 5)], name
    assert not spark.catalog.tableExists(marked)


def test_the_callers_cached_dataframe_stays_cached(session):
    from dbt_merge import MergeError
    from dbt_merge.spark import merge_dataframe

    spark = session
    target = f"{DB}.cached"
    make_table(spark, target)
    df = spark.createDataFrame(SOURCE, COLUMNS).cache()
    df.count()
    try:
        with pytest.raises(MergeError):
            merge_dataframe(df, target, key_columns="id", strategy="upsert",
                            merge_update_columns=["nope"])
        assert df.storageLevel.useMemory
        merge_dataframe(df, target, key_columns="id")
        assert df.storageLevel.useMemory
        cm = spark._jsparkSession.sharedState().cacheManager()
        assert cm.lookupCachedData(df._jdf).isDefined()
    finally:
        df.unpersist()


# ----------------------------------------------------------------------- the source, read once

def _on_statement(monkeypatch, prefix: str, action) -> list:
    """Run `action()` once, just before the flow's first statement starting with `prefix`."""
    from dbt_merge.spark import session as spark_session

    done: list = []
    original = spark_session.SparkRunner.statement

    def statement(self, sql: str) -> None:
        if not done and sql.lstrip().lower().startswith(prefix):
            done.append(sql)
            action()
        original(self, sql)

    monkeypatch.setattr(spark_session.SparkRunner, "statement", statement)
    return done


@pytest.mark.parametrize("source_kind", ["iceberg table", "parquet folder"])
def test_a_source_the_session_writes_during_the_merge_is_read_once(
        session, monkeypatch, tmp_path, source_kind):
    """The session appends to the DataFrame's table or folder after the checks, before the
    MERGE: the rows written are the rows checked and counted (no key twice, the statistics
    true)."""
    from dbt_merge.spark import merge_dataframe

    spark = session
    target = f"{DB}.read_once_{source_kind[0]}"
    make_table(spark, target)
    extra = spark.createDataFrame([(4, "again", 2), (5, "new", 2)], COLUMNS)
    if source_kind == "iceberg table":
        make_table(spark, f"{target}_src", rows=SOURCE)
        df = spark.table(f"{target}_src")

        def write():
            extra.writeTo(f"{target}_src").append()
    else:
        folder = str(tmp_path / "src")
        spark.createDataFrame(SOURCE, COLUMNS).write.parquet(folder)
        df = spark.read.parquet(folder)

        def write():
            extra.write.mode("append").parquet(folder)
    done = _on_statement(monkeypatch, "merge into", write)
    result = merge_dataframe(df, target, key_columns="id")
    assert done, "the write happened"
    rows, stats = expected("upsert", SOURCE, TARGET)
    assert rows_of(spark, target) == rows
    assert counts(result) == stats


def test_full_refresh_from_the_table_itself(session):
    """full_refresh=True of a parquet table from a DataFrame that reads that table: the table
    is rebuilt from the rows read (today the CREATE re-read the dropped files)."""
    from dbt_merge.spark import merge_dataframe

    spark = session
    target = f"{DB}.self_refresh"
    make_table(spark, target, fmt="parquet")
    df = spark.table(target).where("id < 3")
    result = merge_dataframe(df, target, key_columns="id", full_refresh=True,
                             file_format="parquet")
    assert rows_of(spark, target) == [(1, "a", 1), (2, "b", 1)]
    assert counts(result) == {"inserted": 2, "updated": 0, "deleted": 0, "unchanged": 0,
                              "total": 2}


# --------------------------------------------------------------------------- parquet targets

@pytest.mark.parametrize("partitioned", [True, False])
@pytest.mark.parametrize("strategy", ["upsert", "full_merge"])
def test_a_parquet_table_with_a_row_moving_partition(session, partitioned, strategy):
    """A DataFrame into an existing parquet table (merged by partition overwrite): row 2 moves
    from partition 1 to 2, full_merge empties partition 1. Rows and statistics as the
    reference; no work table left."""
    from dbt_merge.spark import merge_dataframe

    spark = session
    target = f"{DB}.pq_{strategy}_{int(partitioned)}"
    make_table(spark, target, fmt="parquet", partitioned=partitioned)
    source = [(2, "b", 2), (3, "c", 2), (4, "d", 2)]
    result = merge_dataframe(spark.createDataFrame(source, COLUMNS), target, key_columns="id",
                             strategy=strategy, max_delete_fraction=1)
    rows, stats = expected(strategy, source, TARGET)
    assert rows_of(spark, target) == rows
    assert counts(result) == stats
    assert not [t.name for t in spark.catalog.listTables(DB)
                if t.name.startswith(target.split(".")[1] + "__dbt_merge")]


def test_table_properties_and_options_are_literals(session):
    """tblproperties / options values with quotes and backslashes make the table the caller
    asked for (today: a raw ParseException)."""
    from dbt_merge.spark import merge_dataframe

    spark = session
    target = f"{DB}.props"
    spark.sql(f"drop table if exists {target}")
    value = "it's a \\ \"test\""
    merge_dataframe(spark.createDataFrame(SOURCE, COLUMNS), target, key_columns="id",
                    file_format="iceberg", tblproperties={"comment.x": value},
                    partition_by=["p"])
    props = {r[0]: r[1] for r in spark.sql(f"show tblproperties {target}").collect()}
    assert props["comment.x"] == value
    assert rows_of(spark, target) == sorted(SOURCE)


# ---------------------------------------------------------------------- the merge's own commit

def test_snapshot_id_is_the_merges_own_commit(session, monkeypatch):
    """Another commit lands on the target right after the merge's: snapshot_id is still the
    merge's commit (today: read after the call, the later commit)."""
    from dbt_merge.spark import merge_dataframe
    from dbt_merge.spark import session as spark_session

    spark = session
    target = f"{DB}.own_commit"
    make_table(spark, target)
    original = spark_session.SparkRunner.statement
    seen: list = []

    def statement(self, sql: str) -> None:
        original(self, sql)
        if not seen and sql.lstrip().lower().startswith("merge into"):
            seen.append(spark.sql(f"select snapshot_id from {target}.snapshots "
                                  "order by committed_at desc limit 1").collect()[0][0])
            # another writer: its own thread (the merge's commit mark is its thread's)
            other = threading.Thread(target=lambda: spark.createDataFrame(
                [(9, "other", 9)], COLUMNS).writeTo(target).append())
            other.start()
            other.join()

    monkeypatch.setattr(spark_session.SparkRunner, "statement", statement)
    result = merge_dataframe(spark.createDataFrame(SOURCE, COLUMNS), target, key_columns="id")
    assert seen and result.snapshot_id == seen[0]
    latest = spark.sql(f"select snapshot_id from {target}.snapshots order by committed_at desc "
                       "limit 1").collect()[0][0]
    assert latest != result.snapshot_id


def test_a_non_deterministic_dataframe_with_old_dates(session):
    """rand() and a date before 1582 into Iceberg: merged from the rows checked, no internal
    copy failing on Spark's calendar rebase, nothing left in the warehouse."""
    from dbt_merge.spark import merge_dataframe
    from pyspark.sql import functions as F

    spark = session
    target = f"{DB}.old_dates"
    spark.sql(f"drop table if exists {target}")
    spark.sql(f"create table {target} (id bigint, d date, r double) using iceberg")
    spark.sql(f"insert into {target} values (0, date'1500-01-01', 0.0)")
    warehouse = Path(spark.conf.get("spark.sql.warehouse.dir").replace("file:", ""))
    folders = set(os.listdir(warehouse / f"{DB}.db"))
    df = (spark.range(0, 6).withColumn("d", F.lit(datetime.date(1400, 1, 1)))
          .withColumn("r", F.rand()))
    result = merge_dataframe(df, target, key_columns="id")
    assert (result.inserted, result.updated, result.total) == (5, 1, 6)
    stored = spark.table(target).collect()
    assert {r.d for r in stored} == {datetime.date(1400, 1, 1)}
    assert set(os.listdir(warehouse / f"{DB}.db")) == folders


@pytest.mark.parametrize("stop_at", ["alter table", "insert overwrite"])
def test_an_interrupted_partition_rewrite_never_loses_a_moved_row(session, monkeypatch, stop_at):
    """Row 2 moves from partition 1 to 2 and partition 1 is left empty. The rewrite fails just
    before the work table is marked complete, or just before the overwrite (after the emptied
    partition was dropped): the table is the old one or awaits its finish, and the next merge
    finishes it. No row is lost (on main, a failure at the mark, e.g. an undefined
    run_started_at, came after the emptied partition was dropped: row 2 was gone)."""
    from dbt_merge.spark import merge_dataframe
    from dbt_merge.spark import session as spark_session

    spark = session
    target = f"{DB}.moving_{stop_at.split()[-1]}"
    make_table(spark, target, rows=[(1, "a", 1), (2, "b", 1), (3, "c", 3)], fmt="parquet",
               partitioned=True)
    source = [(2, "b", 2), (3, "c", 3)]
    original = spark_session.SparkRunner.statement

    def statement(self, sql: str) -> None:
        text = sql.lstrip().lower()
        if text.startswith(stop_at) and ("dbt_merge.ready" in text or stop_at != "alter table"):
            raise RuntimeError("stopped here by the test")
        original(self, sql)

    monkeypatch.setattr(spark_session.SparkRunner, "statement", statement)
    with pytest.raises(RuntimeError, match="stopped here"):
        merge_dataframe(spark.createDataFrame(source, COLUMNS), target, key_columns="id",
                        strategy="full_merge", max_delete_fraction=1)
    monkeypatch.setattr(spark_session.SparkRunner, "statement", original)
    spark.sql(f"refresh table {target}")
    if stop_at == "alter table":
        assert rows_of(spark, target) == [(1, "a", 1), (2, "b", 1), (3, "c", 3)]
    result = merge_dataframe(spark.createDataFrame(source, COLUMNS), target, key_columns="id",
                             strategy="full_merge", max_delete_fraction=1)
    assert rows_of(spark, target) == [(2, "b", 2), (3, "c", 3)]
    assert not [t.name for t in spark.catalog.listTables(DB)
                if t.name.startswith(target.split(".")[1] + "__dbt_merge")]
    assert result.total == 2


# --------------------------- the write-once path: histories, the caller's session, a second run

HISTORY_COLUMNS = "id int, name string, k int"
HISTORY_NAMES = ("id", "name", "k")
#: k holds 7 twice: renames swapping id and k give the key a repeat without a new snapshot
HISTORY_ROWS = [(1, "a", 7), (2, "b", 7), (3, "c", 8)]
KIND_PROPERTIES = {
    "mor": {"write.merge.mode": "merge-on-read", "write.update.mode": "merge-on-read",
            "write.delete.mode": "merge-on-read"},
    "v3": {"format-version": "3"},
    "v3 mor": {"format-version": "3", "write.merge.mode": "merge-on-read",
               "write.update.mode": "merge-on-read", "write.delete.mode": "merge-on-read"},
}
HISTORIES = ("none", "upgraded from format 2", "key swapped by renames", "rolled back",
             "record written by hand")
SESSIONS = ("none", "spark.wap.id", "spark.wap.branch", "refresh during the MERGE",
            "spark.wap.id from the MERGE on")
SECOND_RUNS = ("none", "another merge just before ours")
#: the key a history leaves held twice in the table (as a reader of main sees it)
REPEATED = {"key swapped by renames": 7, "rolled back": 2, "record written by hand": 2}
#: the reference's refusal kinds, as the package's message words them
REFUSALS = {"target_duplicate_key": "already holds", "mass_delete": "max_delete_fraction"}
CONCURRENT = "another writer committed to"


@dataclass(frozen=True)
class Run:
    """One drawn case of the write-once path: the target's kind and history, the caller's
    session state, perhaps a second merge into the table, the strategy and the source rows."""

    kind: str
    history: str
    session_state: str
    second: str
    strategy: str
    source: tuple

    def __str__(self) -> str:
        return "/".join((self.kind, self.history, self.session_state, self.second,
                         self.strategy)).replace(" ", "_")


@st.composite
def runs(draw) -> Run:
    kind = draw(st.sampled_from(sorted(KIND_PROPERTIES)))
    history = draw(st.sampled_from(HISTORIES))
    if history == "upgraded from format 2" and "v3" not in kind:
        history = "none"  # a merge-on-read format 2 table has no lineage to miss
    session_state = draw(st.sampled_from(SESSIONS))
    second = draw(st.sampled_from(SECOND_RUNS))
    if session_state.startswith("spark.wap"):
        second = "none"  # the other merge would be staged too
    strategy = draw(st.sampled_from(["upsert", "insert", "full_merge"]))
    if strategy == "full_merge" and "v3" not in kind:
        strategy = "upsert"  # full_merge takes the passes on a format 2 table
    source = draw(st.lists(st.tuples(st.sampled_from([1, 2, 3, 7, 8, 12]),
                                     st.sampled_from(["a", "b", "z"])),
                           min_size=1, max_size=4, unique_by=lambda r: r[0]))
    return Run(kind, history, session_state, second, strategy, tuple(source))


def draw_runs(n: int) -> list[Run]:
    """`n` runs covering every value of every dimension, picked from 30 n draws of `runs()`
    (derandomized: the same ones every time), each taken first for the values, then the pairs
    of values, it adds."""
    drawn: list[Run] = []

    @settings(derandomize=True, database=None, phases=[Phase.generate], max_examples=30 * n,
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(runs())
    def collect(run: Run) -> None:
        drawn.append(run)

    collect()

    def values(run: Run) -> tuple[set, set, set]:
        """What the run adds to the cover, most wanted first: for a history that leaves a key
        held twice, a run updating that key on the write-once path; every dimension's value;
        pairs of values."""
        return ({run.history} if updates_the_repeat(run) else set(),
                {("kind", run.kind), ("history", run.history), ("session", run.session_state),
                 ("second", run.second), ("strategy", run.strategy)},
                {(run.history, run.session_state), (run.session_state, run.second),
                 (run.kind, run.history), (run.history, run.strategy)})

    chosen: list[Run] = []
    covered: set = set()
    for _ in range(n):
        run = max((r for r in drawn if r not in chosen),
                  key=lambda r: tuple(len(v - covered) for v in values(r)))
        chosen.append(run)
        covered |= set().union(*values(run))
    return chosen


def updates_the_repeat(run: Run) -> bool:
    """Does the run's source update the key its history leaves held twice, on the write-once
    path (no staging; a full_merge of at least half the table's rows)? Trusting a false record
    of verified keys would update both rows as one."""
    return (REPEATED.get(run.history) in {i for i, _ in run.source}
            and run.strategy != "insert" and not run.session_state.startswith("spark.wap")
            and (run.strategy != "full_merge" or 2 * len(run.source) >= 4))


#: the runs the test makes (test_the_runs_cover_every_dimension checks they cover them all)
RUNS = draw_runs(8)


def test_the_runs_cover_every_dimension():
    for dimension, every in (("kind", KIND_PROPERTIES), ("history", HISTORIES),
                             ("session_state", SESSIONS), ("second", SECOND_RUNS),
                             ("strategy", ("upsert", "insert", "full_merge"))):
        assert {getattr(r, dimension) for r in RUNS} == set(every), dimension
    assert {r.history for r in RUNS if updates_the_repeat(r)} == set(REPEATED)


def _history(spark, table: str, kind: str, history: str) -> list[tuple]:
    """Make `table` with the drawn history; return its rows as a reader of main sees them."""
    from dbt_merge.spark import merge_dataframe

    props = dict(KIND_PROPERTIES[kind])
    if history == "upgraded from format 2":
        props["format-version"] = "2"
    spark.sql(f"create table {table} ({HISTORY_COLUMNS}) using iceberg tblproperties ("
              + ", ".join(f"'{k}' = '{v}'" for k, v in props.items()) + ")")
    rows = list(HISTORY_ROWS)
    if history in ("rolled back", "record written by hand"):
        rows.append((2, "twice", 9))  # key 2 held twice
    spark.createDataFrame(rows, HISTORY_COLUMNS).writeTo(table).append()
    if history == "upgraded from format 2":
        # the files written at format 2 carry no row lineage
        spark.sql(f"alter table {table} set tblproperties ('format-version' = '3')")
    elif history == "key swapped by renames":
        # the package records id's keys verified, then the names of id and k are swapped
        # (metadata commits, no new snapshot): id now holds 7 twice
        merge_dataframe(spark.createDataFrame(HISTORY_ROWS[:1], HISTORY_COLUMNS), table,
                        key_columns="id")
        for sql in ("id to tmp", "k to id", "tmp to k"):
            spark.sql(f"alter table {table} rename column {sql}")
        spark.sql(f"alter table {table} alter column id first")
        spark.sql(f"alter table {table} alter column k after name")
        rows = [(k, n, i) for i, n, k in HISTORY_ROWS]
    elif history == "rolled back":
        # the repeat removed, the keys recorded verified for that snapshot, then the table
        # rolled back to the snapshot holding key 2 twice
        before = spark.sql(f"select snapshot_id from {table}.refs where name = 'main'").first()[0]
        spark.sql(f"delete from {table} where name = 'twice'")
        merge_dataframe(spark.createDataFrame(HISTORY_ROWS[:1], HISTORY_COLUMNS), table,
                        key_columns="id")
        assert spark.sql(f"show tblproperties {table} ('dbt_merge.keys-verified')").first()[1]
        spark.sql(f"call spark_catalog.system.rollback_to_snapshot('{table}', {before})")
    elif history == "record written by hand":
        # every field of the current form right for this snapshot (id is field 1) but the
        # seal; the table holds key 2 twice
        snapshot = spark.sql(f"select snapshot_id from {table}.refs where name = 'main'").first()[0]
        keys = hashlib.md5(b"2:id").hexdigest()[:16]
        version = props.get("format-version", "2")
        spark.sql(f"alter table {table} set tblproperties ('dbt_merge.keys-verified' = "
                  f"'k3:{snapshot}:{version}:{keys}:1:{len(rows)}:{'0' * 16}')")
    return rows


def _reference(strategy: str, source, target):
    """(rows, five statistics, None) of the reference model, or (None, None, the words of its
    refusal)."""
    try:
        rows, stats = reference_merge(
            strategy, [dict(zip(HISTORY_NAMES, r, strict=True)) for r in source],
            [dict(zip(HISTORY_NAMES, r, strict=True)) for r in target], ["id"],
            RefOptions(max_delete_fraction=1), engine="spark")
    except RefMergeError as error:
        return None, None, REFUSALS.get(error.kind, error.kind)
    return sorted(tuple(r[c] for c in HISTORY_NAMES) for r in rows), stats.as_dict(), None


def _changes(stats: dict) -> int:
    return stats["inserted"] + stats["updated"] + stats["deleted"]


def _keys_record(spark, table: str) -> str:
    props = {r[0]: r[1] for r in spark.sql(f"show tblproperties {table}").collect()}
    return props.get("dbt_merge.keys-verified") or ""


def _assert_record_true(spark, table: str, record: str, what) -> None:
    """The package's record of verified keys, 'k3:<snapshot>:<format>:<keys>:<field ids>:<rows>:
    <seal>', says what the snapshot it names holds: every id present and held once, that many
    rows."""
    parts = record.split(":")
    assert len(parts) == 7 and parts[0] == "k3", (record, what)
    held = spark.sql(f"select count(*), count(id), count(distinct id) from {table} "
                     f"version as of {parts[1]}").first()
    assert held[0] == held[1] == held[2] == int(parts[5]), (record, held, what)


def _refresh_when_a_job_runs(spark, table: str) -> None:
    """Another thread of the session: once a Spark job runs (the MERGE's), refresh the table
    and read it, so that Iceberg's catalog caches it as it was before the MERGE's commit."""
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 30
    while not tracker.getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.002)
    spark.sql(f"refresh table {table}")
    spark.sql(f"select count(*) from {table}.refs").collect()


@pytest.mark.parametrize("run", RUNS, ids=str)
def test_histories_sessions_and_a_second_run(session, monkeypatch, run):
    """Drawn: a merge-on-read or v3 target with a history (upgraded from format 2; the key
    swapped with a repeated column by renames after the package recorded its keys; rolled back
    past the commit the keys were recorded for, to a snapshot holding a key twice; a record
    written by hand), the caller's session state (write-audit-publish settings, from the start
    or from the MERGE on; another thread refreshing and reading the table during the MERGE), and
    perhaps another merge into the table between the run's first look and its MERGE. Whatever
    path the merge takes: the reference's rows and statistics where it writes (main, the staged
    snapshot or the WAP branch), as if the other merge ran first or last; or the reference's
    refusal, the package's message for another writer's commit, or (staging switched on during
    the run) for a commit it cannot prove; the table as it was after a refusal; the settings as
    the caller left them; no branch of the package left; a record of verified keys the run
    writes is true of the snapshot it names."""
    from dbt_merge import MergeError
    from dbt_merge.spark import merge_dataframe
    from dbt_merge.spark import session as spark_session

    spark = session
    table = f"{DB}.hist{next(SERIAL)}"
    spark.sql(f"drop table if exists {table}")
    target = _history(spark, table, run.kind, run.history)
    staging = run.session_state.startswith("spark.wap")
    if staging:
        spark.sql(f"alter table {table} set tblproperties ('write.wap.enabled' = 'true')")
    main_before = spark.sql(f"select snapshot_id from {table}.refs where name = 'main'").first()[0]
    record_before = _keys_record(spark, table)
    fired: list = []
    readers: list = []
    original = spark_session.SparkRunner.statement

    def statement(self, sql: str) -> None:
        if not fired and " ".join(sql.lower().split()).startswith("merge into"):
            fired.append(sql)
            if run.session_state == "refresh during the MERGE":
                readers.append(threading.Thread(target=_refresh_when_a_job_runs,
                                                args=(spark, table)))
                readers[-1].start()
            elif run.session_state == "spark.wap.id from the MERGE on":
                spark.conf.set("spark.wap.id", "late")
            if run.second != "none":
                merge_dataframe(spark.createDataFrame([(99, "other", 0)], HISTORY_COLUMNS),
                                table, key_columns="id")
        original(self, sql)

    setting = {"spark.wap.id": ("spark.wap.id", "audit"),
               "spark.wap.branch": ("spark.wap.branch", "audit")}.get(run.session_state)
    monkeypatch.setattr(spark_session.SparkRunner, "statement", statement)
    if setting:
        spark.conf.set(*setting)
    try:
        try:
            result, refused = merge_dataframe(
                spark.createDataFrame([(i, n, 0) for i, n in run.source], HISTORY_COLUMNS),
                table, key_columns="id", strategy=run.strategy, max_delete_fraction=1), None
        except MergeError as error:
            result, refused = None, str(error)
        if setting:
            assert spark.conf.get(setting[0]) == setting[1]
    finally:
        for key in ("spark.wap.id", "spark.wap.branch"):
            spark.conf.unset(key)
        monkeypatch.setattr(spark_session.SparkRunner, "statement", original)
        for reader in readers:
            reader.join(60)
    source = [(i, n, 0) for i, n in run.source]
    seen = rows_of(spark, table)
    what = (str(run), run.source, refused, result)
    assert [r[0] for r in spark.sql(f"select name from {table}.refs").collect()
            if r[0].startswith("dbt_merge_")] == [], what
    record = _keys_record(spark, table)
    if record and record != record_before:
        _assert_record_true(spark, table, record, what)
    late = run.session_state == "spark.wap.id from the MERGE on" and bool(fired)
    if run.second != "none" and fired:
        other = sorted([*target, (99, "other", 0)])
        if refused is not None and CONCURRENT in refused:
            assert seen == other, what
            return
        want_rows, want, _ = _reference(run.strategy, source, target)
        if result is not None and want is not None and _changes(want) == 0 \
                and counts(result) == want and seen == other:
            return  # ours first (nothing to publish), then the other
        target = other  # the other first, ours counted after it
    want_rows, want, want_error = _reference(run.strategy, source, target)
    if want_error is not None:
        assert refused is not None and want_error in refused, what
        assert seen == sorted(target), what
        return
    if late and refused is not None:
        assert "cannot prove what it wrote" in refused, what
        assert seen == sorted(target), what
        assert record == record_before, what
        return
    assert refused is None, what
    assert counts(result) == want, what
    if not (setting or late):
        assert seen == want_rows, what
        return
    # staged, as the session asks: main as it was, the merge in the staged snapshot or the WAP
    # branch, no record of verified keys
    main_now = spark.sql(f"select snapshot_id from {table}.refs where name = 'main'").first()[0]
    assert main_now == main_before and seen == sorted(target), what
    if _changes(want) == 0:
        written = seen  # nothing written, nothing staged
    elif run.session_state == "spark.wap.branch":
        written = rows_of(spark, f"{table}.branch_audit")
    else:
        staged = spark.sql(f"select snapshot_id from {table}.snapshots "
                           "where summary['wap.id'] is not null").collect()
        assert len(staged) == 1, what
        written = sorted(tuple(r) for r in spark.sql(
            f"select * from {table} version as of {staged[0][0]}").collect())
    assert written == want_rows, what
    assert record == record_before, what
