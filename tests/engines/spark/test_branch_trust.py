"""Spark, the write-once path on Iceberg branches (macros/write/merge_on_branch.sql) against what a
hostile caller does around it (issue 35, items 1-7): what the run reports is what it committed,
its record of verified keys is never false, runs own their branches, the user's session settings
are the user's.

- a stale cache: another thread of the session refreshes and reads the table while the run's
  MERGE runs, so Iceberg's catalog caches the table as it was before that commit; the run still
  finds and counts its own commit (merge_dataframe and dbt);
- two merges into one table at the same moment (threads of one session; Iceberg's `hadoop`
  catalog, whose commit is an atomic rename, in a session of its own: the test bed's Hive
  catalog runs with its commit lock off and can lose one of two simultaneous commits): each
  either commits and counts its rows or fails with the package's message;
- dbt_merge.keys-verified: columns swapped by renames (no new snapshot), a record written by
  hand, a column named `a,b` against the key (a, b), another writer's commit between the
  snapshot and the keys' read followed by a rollback to it: never trusted while false;
- a format 2 table upgraded to format 3 (files without row lineage): the right counts;
- the user's write-audit-publish settings (spark.wap.id, spark.wap.branch with
  write.wap.enabled): merged as the session asks, counted right, settings untouched, no record;
- another run's branch is never dropped as a leftover unless its name says it is a day old;
- another writer between the last check and the fast-forward: the package's message
  (merge_dataframe); a format 1 table set to merge-on-read: refused with the fix; a repeated key
  in a 3-row DataFrame: the package's message, nothing of the run left;
- merge_dataframe creating an Iceberg table partitioned by a transform (`bucket(4, id)`).
"""

from __future__ import annotations

import hashlib
import re
import threading
import time

import pytest
from dbt_helpers import run_dbt
from support.harness import PROFILES_DIR
from support.scenario import message, project

#: the write-once path, which a project asks for (dbt_merge_commit_counts: true)
pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("write_once")]

DB = "branch_trust"
MOR = {"write.merge.mode": "merge-on-read", "write.update.mode": "merge-on-read",
       "write.delete.mode": "merge-on-read"}
V3 = {"format-version": "3"}
COLUMNS = "id bigint, name string"
CONCURRENT = "another writer committed to"


def _props(values: dict) -> str:
    return ", ".join(f"'{k}' = '{v}'" for k, v in values.items())


def make(spark, name: str, rows, props: dict = MOR, columns: str = COLUMNS) -> str:
    table = f"{DB}.{name}"
    spark.sql(f"create database if not exists {DB}")
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} ({columns}) using iceberg tblproperties ({_props(props)})")
    if rows:
        spark.createDataFrame(rows, columns).writeTo(table).append()
    return table


def rows_of(spark, table: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.table(table).collect())


def branches(spark, table: str) -> list[str]:
    return sorted(r[0] for r in spark.sql(f"select name from {table}.refs").collect()
                  if r[0] != "main")


def marks(spark, table: str) -> dict:
    return {r[0]: r[1] for r in spark.sql(f"show tblproperties {table}").collect()
            if r[0].startswith("dbt_merge.")}


def main_snapshot(spark, table: str) -> int:
    return spark.sql(f"select snapshot_id from {table}.refs where name = 'main'").collect()[0][0]


def counts(result) -> tuple:
    return (result.inserted, result.updated, result.deleted, result.unchanged, result.total)


def on_statement(monkeypatch, test, action) -> list:
    """Run `action(sql)` once, just before the first statement of merge_dataframe's flow for
    which `test(sql)` is true."""
    from dbt_merge.spark import session as spark_session

    done: list = []
    original = spark_session.SparkRunner.statement

    def statement(self, sql: str) -> None:
        if not done and test(" ".join(sql.lower().split())):
            done.append(sql)
            action(sql)
        original(self, sql)

    monkeypatch.setattr(spark_session.SparkRunner, "statement", statement)
    return done


def into_branch(sql: str) -> bool:
    return "merge into " in sql and ".branch_dbt_merge_" in sql


class StaleReader:
    """Another thread of the session that, once the next Spark job starts (the run's MERGE,
    whose table was loaded when the statement was planned), refreshes the table and reads its
    references: Iceberg's catalog then caches the table as it was before the MERGE's commit.
    `seen`: the references it read."""

    def __init__(self, spark, table: str):
        self.spark, self.table, self.seen = spark, table, None
        self.thread = threading.Thread(target=self._run)

    def start(self, *_) -> None:
        self.thread.start()

    def _run(self) -> None:
        tracker = self.spark.sparkContext.statusTracker()
        deadline = time.monotonic() + 60
        while not tracker.getActiveJobsIds() and time.monotonic() < deadline:
            time.sleep(0.002)
        self.spark.sql(f"refresh table {self.table}")
        self.seen = {r[0]: r[1] for r in self.spark.sql(
            f"select name, snapshot_id from {self.table}.refs").collect()}

    def join(self) -> None:
        self.thread.join(60)


# ------------------------------------------------------------------ item 1: a stale cache


def test_a_cache_loaded_before_the_commit_never_hides_it(spark, monkeypatch):
    """While the run's MERGE into its branch runs, another thread refreshes the table and
    reads it (the cache now predates the commit). The run counts its own commit: today it read
    the branch's head from that cache, found the snapshot it started from, dropped the branch
    holding its rows and returned 'unchanged'."""
    from dbt_merge.spark import merge_dataframe

    for name, props in (("stale_mor", MOR), ("stale_v3", V3)):
        table = make(spark, name, [(1, "a"), (2, "b")], props)
        before = main_snapshot(spark, table)
        reader = StaleReader(spark, table)
        done = on_statement(monkeypatch, into_branch, reader.start)
        result = merge_dataframe(spark.createDataFrame([(1, "A"), (3, "c")], COLUMNS), table,
                                 key_columns="id")
        reader.join()
        assert done and reader.seen is not None
        # the reader did load the table before the MERGE's commit: the run's branch was at
        # the snapshot it started from
        assert [v for k, v in reader.seen.items() if k != "main"] == [before], reader.seen
        assert counts(result) == (1, 1, 0, 0, 3), (name, result)
        assert rows_of(spark, table) == [(1, "A"), (2, "b"), (3, "c")]
        assert result.snapshot_id == main_snapshot(spark, table) != before
        assert branches(spark, table) == []


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_another_sessions_commit_before_the_run_is_seen(spark, mode):
    """Red team (round 5, F1): session B (its own Iceberg catalog cache, as another job's) updates
    row 1 and deletes row 2 after session A loaded the table; A then merges the old values. Seen
    failing before the run reloaded its target: 'unchanged 2', nothing written, B's values kept
    (merge-on-read on the write-once path, copy-on-write on the passes). Now: both rows written
    back, counted as an update and an insert."""
    from dbt_merge.spark import merge_dataframe

    props = {"write.merge.mode": mode, "write.update.mode": mode, "write.delete.mode": mode}
    table = make(spark, f"stale_{mode[0]}", [(1, "a"), (2, "b")], props)
    merge_dataframe(spark.createDataFrame([(3, "c")], COLUMNS), table, key_columns="id")
    other = spark.newSession()
    other.sql(f"update {table} set name = 'CHANGED' where id = 1")
    other.sql(f"delete from {table} where id = 2")
    result = merge_dataframe(spark.createDataFrame([(1, "a"), (2, "b")], COLUMNS), table,
                             key_columns="id")
    assert counts(result) == (1, 1, 0, 0, 3), result
    assert rows_of(spark, table) == [(1, "a"), (2, "b"), (3, "c")]
    assert branches(spark, table) == []


def test_a_tag_named_like_a_package_branch_is_not_ours(spark):
    """Red team (round 5, F3): a tag named like a day-old package branch. Seen failing: Iceberg's
    raw 'is a tag not a branch' after the MERGE, and every later run the same. Now the merge
    publishes and counts, and the tag stays."""
    from dbt_merge.spark import merge_dataframe

    table = make(spark, "tagged", [(1, "a"), (2, "b")])
    tag = "dbt_merge_20200101000000_aaaaaaaaaaaa"
    spark.sql(f"alter table {table} create tag {tag} as of version {main_snapshot(spark, table)}")
    for source, expected in (([(1, "A"), (3, "c")], (1, 1, 0, 0, 3)),
                             ([(4, "d")], (1, 0, 0, 0, 4))):
        result = merge_dataframe(spark.createDataFrame(source, COLUMNS), table, key_columns="id")
        assert counts(result) == expected, result
    assert rows_of(spark, table) == [(1, "A"), (2, "b"), (3, "c"), (4, "d")]
    assert branches(spark, table) == [tag]


def test_a_wap_branch_set_while_the_run_writes_its_branch(spark, monkeypatch):
    """Red team (round 5, F4): another thread sets spark.wap.branch (write.wap.enabled) just as
    the run's MERGE into its branch starts. Seen failing: Iceberg's raw 'Cannot write to both
    branch and WAP branch'. Now the package's message; table and branches as they were."""
    from dbt_merge.spark import MergeError, merge_dataframe

    table = make(spark, "wap_branch_late", [(1, "a"), (2, "b")],
                 {**MOR, "write.wap.enabled": "true"})
    on_statement(monkeypatch, into_branch,
                 lambda sql: spark.conf.set("spark.wap.branch", "audit"))
    try:
        with pytest.raises(MergeError, match="the session set spark.wap.branch while this call"):
            merge_dataframe(spark.createDataFrame([(1, "A"), (3, "c")], COLUMNS), table,
                            key_columns="id")
    finally:
        spark.conf.unset("spark.wap.branch")
    assert rows_of(spark, table) == [(1, "a"), (2, "b")]
    assert branches(spark, table) == []


def test_two_merges_at_once_commit_and_count_or_refuse(spark, tmp_path):
    """Two merge_dataframe calls into one merge-on-read table, in two threads of one session,
    three rounds: each call either commits its rows and counts them, or fails with the
    package's message; the table then holds every committed call's rows. Iceberg's `hadoop`
    catalog (an atomic commit) is this session's catalog: the Hive catalog of the test bed runs
    with its lock off and may lose one of two simultaneous commits whatever the package does."""
    from dbt_merge.spark import MergeError, merge_dataframe

    atomic = spark.newSession()
    atomic.conf.set("spark.sql.catalog.spark_catalog",
                    "org.apache.iceberg.spark.SparkSessionCatalog")
    atomic.conf.set("spark.sql.catalog.spark_catalog.type", "hadoop")
    atomic.conf.set("spark.sql.catalog.spark_catalog.warehouse", str(tmp_path / "hadoop"))
    table = make(atomic, "race", [(0, "base")])
    expected = {0: "base"}
    outcomes = []
    for round_ in range(3):
        sources = {t: [(100 * round_ + 10 * t + k, f"r{round_}t{t}") for k in (1, 2)]
                   for t in (1, 2)}
        results: dict = {}

        def call(t: int, rows: list, results: dict) -> None:
            try:
                results[t] = merge_dataframe(
                    atomic.createDataFrame(rows, COLUMNS), table, key_columns="id")
            except Exception as error:  # noqa: BLE001 (any other error fails the test below)
                results[t] = error

        threads = [threading.Thread(target=call, args=(t, sources[t], results)) for t in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        total = len(expected)
        for t in (1, 2):
            got = results[t]
            assert not isinstance(got, Exception) or isinstance(got, MergeError), (
                str(getattr(got, "java_exception", got)))
            if isinstance(got, MergeError):
                assert CONCURRENT in str(got) and "again is safe" in str(got), str(got)
                outcomes.append("refused")
                continue
            outcomes.append("committed")
            expected.update(dict(sources[t]))
            assert (got.inserted, got.updated, got.deleted, got.unchanged) == (2, 0, 0, 0), got
            assert got.total >= total + 2
        assert dict(rows_of(atomic, table)) == expected, (round_, results)
        assert branches(atomic, table) == []
    assert "committed" in outcomes


# ------------------------------------------------------------------ item 2: keys-verified


def _published_record(spark, table: str, source) -> str:
    from dbt_merge.spark import merge_dataframe

    merge_dataframe(spark.createDataFrame(source, spark.table(table).schema), table,
                    key_columns="id")
    record = marks(spark, table)["dbt_merge.keys-verified"]
    assert record
    return record


def test_columns_swapped_by_renames(spark):
    """id is unique, k holds 5 twice; after the package recorded id as verified, renames swap
    the two names (a metadata commit, no new snapshot). A merge on id (now the old k) updating
    5 must not update both rows as one: the passes refuse the key the table holds twice."""
    from dbt_merge.spark import MergeError, merge_dataframe

    table = make(spark, "swapped", [(1, 5, "a"), (2, 5, "b"), (3, 6, "c")],
                 columns="id bigint, k bigint, name string")
    _published_record(spark, table, [(1, 5, "a"), (4, 7, "d")])
    for sql in ("rename column id to tmp", "rename column k to id", "rename column tmp to k"):
        spark.sql(f"alter table {table} {sql}")
    before = rows_of(spark, table)
    # id 5 (held twice) changed, 6 and 7 as they are: today the commit said 2 updated and 1
    # unchanged for 1 changed row and 2 unchanged, a count no check could catch
    source = spark.createDataFrame([(5, 9, "z"), (6, 3, "c"), (7, 4, "d")],
                                   "id bigint, k bigint, name string")
    with pytest.raises(MergeError, match=r"already holds 1 extra row\(s\) for keys"):
        merge_dataframe(source, table, key_columns="id")
    assert rows_of(spark, table) == before
    assert branches(spark, table) == []


def test_a_record_written_by_hand_or_for_other_columns(spark):
    """The table holds key 2 twice. A record naming its snapshot, written by hand (the old form
    and the current one, with a made-up seal), or written by the package for a single column
    named `a,b`, is not taken for the key (a, b): the passes refuse the key held twice."""
    from dbt_merge.spark import MergeError, merge_dataframe

    table = make(spark, "by_hand", [(1, "x"), (2, "y"), (2, "y2")])
    snapshot = main_snapshot(spark, table)
    # the old form; the current form, every field right (id is field 1) but the seal made up
    keys = hashlib.md5(b"2:id").hexdigest()[:16]
    forged = [f"{snapshot}:id:3", f"k3:{snapshot}:2:{keys}:1:3:" + "0" * 16]
    for value in forged:
        spark.sql(f"alter table {table} set tblproperties ('dbt_merge.keys-verified' = '{value}')")
        with pytest.raises(MergeError, match=r"already holds 1 extra row\(s\) for keys"):
            merge_dataframe(spark.createDataFrame([(2, "z"), (1, "x")], COLUMNS), table,
                            key_columns="id")
        assert rows_of(spark, table) == [(1, "x"), (2, "y"), (2, "y2")]
        assert branches(spark, table) == []
    # a column named `a,b`, unique, and the key (a, b), held twice
    columns = "a bigint, b bigint, `a,b` bigint, name string"
    table = make(spark, "comma", [(1, 1, 1, "p"), (1, 1, 2, "q"), (2, 2, 3, "t"), (3, 3, 4, "u")],
                 columns=columns)
    merge_dataframe(spark.createDataFrame([(3, 3, 4, "u")], columns), table,
                    key_columns=["a,b"])
    assert marks(spark, table)["dbt_merge.keys-verified"]
    before = rows_of(spark, table)
    with pytest.raises(MergeError, match=r"already holds 1 extra row\(s\) for keys"):
        merge_dataframe(spark.createDataFrame([(1, 1, 9, "s"), (2, 2, 3, "t"), (3, 3, 4, "u")],
                                              columns), table, key_columns=["a", "b"])
    assert rows_of(spark, table) == before


def test_a_commit_between_the_snapshot_and_the_keys_then_a_rollback(spark, monkeypatch):
    """Snapshot S holds key 2 twice. A run pins S; before it reads the keys another writer
    removes the repeat; the run's SELECT changes nothing. Then the table is rolled back to S.
    The next merge updating 2 must refuse the key held twice: the keys are read as of the
    snapshot the run merges into, so no record claims S."""
    from dbt_merge.spark import MergeError, merge_dataframe
    from dbt_merge.spark import session as spark_session

    table = make(spark, "rolled_back", [(1, "x"), (2, "y"), (2, "y")])
    pinned = main_snapshot(spark, table)
    original = spark_session.SparkRunner.query
    fired: list = []

    def query(self, sql: str):
        if not fired and "count(distinct" in sql and table.split(".")[1] in sql:
            fired.append(sql)
            other = threading.Thread(target=lambda: spark.sql(
                f"delete from {table} where id = 2"))
            other.start()
            other.join()
            spark.sql(f"insert into {table} values (2, 'y')")
        return original(self, sql)

    monkeypatch.setattr(spark_session.SparkRunner, "query", query)
    try:
        merge_dataframe(spark.createDataFrame([(1, "x")], COLUMNS), table, key_columns="id")
    except MergeError:
        pass  # refused (the table moved): fine, as long as nothing false is recorded
    monkeypatch.setattr(spark_session.SparkRunner, "query", original)
    assert fired
    spark.sql(f"call spark_catalog.system.rollback_to_snapshot('{table}', {pinned})")
    assert rows_of(spark, table) == [(1, "x"), (2, "y"), (2, "y")]
    with pytest.raises(MergeError, match=r"already holds 1 extra row\(s\) for keys"):
        merge_dataframe(spark.createDataFrame([(2, "z"), (1, "x")], COLUMNS), table,
                        key_columns="id")
    assert rows_of(spark, table) == [(1, "x"), (2, "y"), (2, "y")]


# ------------------------------------------------------------------ item 3: upgraded tables


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_a_format_2_table_upgraded_to_3(spark, monkeypatch, mode):
    """Ten rows written at format 2 (files without row lineage), the table upgraded to 3, then
    a merge of 1 new and 2 changed rows and 1 unchanged: counted as such (today: the rewritten
    or re-written old rows counted as new, and as deleted). Its commit gives every file
    lineage: the next merge writes once on a branch and counts from its commit."""
    from dbt_merge.spark import merge_dataframe
    from dbt_merge.spark import session as spark_session

    seen: list = []
    original = spark_session.SparkRunner.statement

    def statement(self, sql: str) -> None:
        seen.append(" ".join(sql.lower().split()))
        original(self, sql)

    monkeypatch.setattr(spark_session.SparkRunner, "statement", statement)

    props = {"format-version": "2", "write.merge.mode": mode, "write.update.mode": mode,
             "write.delete.mode": mode}
    table = make(spark, f"upgraded_{mode[0]}", [(i, f"v{i}") for i in range(10)], props)
    spark.sql(f"alter table {table} set tblproperties ('format-version' = '3')")
    source = [(1, "x"), (2, "y"), (3, "v3"), (20, "n")]
    result = merge_dataframe(spark.createDataFrame(source, COLUMNS), table, key_columns="id")
    assert counts(result) == (1, 2, 0, 1, 11), result
    expected = {i: f"v{i}" for i in range(10)} | dict(source)
    assert dict(rows_of(spark, table)) == expected
    seen.clear()
    result = merge_dataframe(spark.createDataFrame([(2, "w"), (21, "m")], COLUMNS), table,
                             key_columns="id")
    assert counts(result) == (1, 1, 0, 0, 12), result
    assert [q for q in seen if into_branch(q)] and branches(spark, table) == []


def test_a_format_2_table_with_partition_scoped_deletes_upgraded_to_3(spark):
    """Red team (round 5, F2): format 2 merge-on-read position deletes scoped to a whole
    partition (Iceberg's default before 1.8), the table then upgraded to 3. Seen failing: an
    upsert that deleted nothing reported deleted=1 and a total 2 short (the snapshot summary's
    live rows are not the table's). Now the passes count it, exactly, every time."""
    from dbt_merge.spark import merge_dataframe

    props = {**MOR, "format-version": "2", "write.delete.granularity": "partition"}
    table = make(spark, "upgraded_pd", [(i, "x") for i in range(10)], props)
    spark.sql(f"insert into {table} select id, 'x' from range(10, 20)")
    spark.sql(f"update {table} set name = 'y' where id in (1, 11)")  # one delete file, two files
    spark.sql(f"alter table {table} set tblproperties ('format-version' = '3')")
    expected = {i: "x" for i in range(20)} | {1: "y", 11: "y"}
    for source, want in (([(2, "z")], (0, 1, 0, 0, 20)),
                         ([(3, "z"), (13, "z"), (100, "n")], (1, 2, 0, 0, 21))):
        result = merge_dataframe(spark.createDataFrame(source, COLUMNS), table, key_columns="id")
        assert counts(result) == want, result
        expected |= dict(source)
        assert dict(rows_of(spark, table)) == expected


# ------------------------------------------------------------------ item 4: WAP settings


@pytest.mark.parametrize("setting", ["spark.wap.id", "spark.wap.branch"])
def test_the_users_write_audit_publish_settings(spark, setting):
    """The table has write.wap.enabled and the session sets spark.wap.id (Iceberg stages the
    commit) or spark.wap.branch (writes go to that branch): the merge is written as the session
    asks, counted right (today: 'unchanged' and a record, or Iceberg's 'Cannot write to both
    branch and WAP branch'), main untouched, no record, the setting as the user left it."""
    from dbt_merge.spark import merge_dataframe

    table = make(spark, f"wap_{setting.rsplit('.', 1)[1]}", [(1, "a"), (2, "b")],
                 {**MOR, "write.wap.enabled": "true"})
    before = main_snapshot(spark, table)
    spark.conf.set(setting, "audit1")
    try:
        result = merge_dataframe(spark.createDataFrame([(1, "A"), (3, "c")], COLUMNS), table,
                                 key_columns="id")
        assert spark.conf.get(setting) == "audit1"
    finally:
        spark.conf.unset(setting)
    assert counts(result) == (1, 1, 0, 0, 3), result
    assert main_snapshot(spark, table) == before
    assert "dbt_merge.keys-verified" not in marks(spark, table)
    merged = [(1, "A"), (2, "b"), (3, "c")]
    if setting == "spark.wap.id":
        staged = spark.sql(f"select snapshot_id from {table}.snapshots "
                           "where summary['wap.id'] = 'audit1'").collect()
        assert len(staged) == 1
        read = spark.sql(f"select * from {table} version as of {staged[0][0]}").collect()
    else:
        assert branches(spark, table) == ["audit1"]
        read = spark.sql(f"select * from {table}.branch_audit1").collect()
    assert sorted(tuple(r) for r in read) == merged


def test_staging_switched_on_during_the_run(spark, monkeypatch):
    """spark.wap.id is set (by another thread of the session) after the run looked at the table
    and before its MERGE: Iceberg stages the branch's commit instead of moving the branch. The
    run cannot prove what it wrote: refused with the package's message, main untouched, no
    branch, no record (today: 'unchanged' and a record)."""
    from dbt_merge.spark import MergeError, merge_dataframe

    table = make(spark, "wap_late", [(1, "a"), (2, "b")], {**MOR, "write.wap.enabled": "true"})
    before = main_snapshot(spark, table)
    on_statement(monkeypatch, into_branch, lambda sql: spark.conf.set("spark.wap.id", "late"))
    try:
        with pytest.raises(MergeError, match="cannot prove what it wrote") as refused:
            merge_dataframe(spark.createDataFrame([(1, "A"), (3, "c")], COLUMNS), table,
                            key_columns="id")
    finally:
        spark.conf.unset("spark.wap.id")
    assert "spark.wap.id" in str(refused.value)
    assert main_snapshot(spark, table) == before
    assert rows_of(spark, table) == [(1, "a"), (2, "b")]
    assert branches(spark, table) == [] and marks(spark, table) == {}


# --------------------------------------------------------------- item 5: runs own their branches


def test_another_runs_branch_is_not_a_leftover(spark, monkeypatch):
    """Run A makes its branch; run B merges into the same table before A's MERGE runs (in A's
    hook). B leaves A's branch alone (today B dropped it, named in the table's properties, and A
    failed with Iceberg's raw error); A then finds main moved and refuses with the package's
    message. A branch of the package's form whose name says it is two days old is dropped; one
    of today, or of an older package's form, is not."""
    from dbt_merge.spark import MergeError, merge_dataframe

    table = make(spark, "owned", [(1, "a"), (2, "b")])
    base = main_snapshot(spark, table)
    old = time.strftime("%Y%m%d%H%M%S", time.gmtime(time.time() - 2 * 86400))
    now = time.strftime("%Y%m%d%H%M%S", time.gmtime())
    for name in (f"dbt_merge_{old}_aaaaaaaaaaaa", f"dbt_merge_{now}_bbbbbbbbbbbb",
                 "dbt_merge_0123456789abcdef"):
        spark.sql(f"alter table {table} create branch {name} as of version {base}")
    seen: dict = {}

    def other_run(sql: str) -> None:
        seen["a"] = re.search(r"\.branch_(dbt_merge_\w+)", sql).group(1)
        seen["result"] = merge_dataframe(spark.createDataFrame([(5, "b5")], COLUMNS), table,
                                         key_columns="id")
        seen["branches"] = branches(spark, table)

    on_statement(monkeypatch, into_branch, other_run)
    with pytest.raises(MergeError, match=CONCURRENT) as refused:
        merge_dataframe(spark.createDataFrame([(1, "A"), (3, "c")], COLUMNS), table,
                        key_columns="id")
    assert "Running the merge again is safe" in str(refused.value)
    assert counts(seen["result"]) == (1, 0, 0, 0, 3)
    assert seen["a"] in seen["branches"]
    assert rows_of(spark, table) == [(1, "a"), (2, "b"), (5, "b5")]
    assert branches(spark, table) == sorted([f"dbt_merge_{now}_bbbbbbbbbbbb",
                                             "dbt_merge_0123456789abcdef"])


# ------------------------------------------------------------------ item 6: the package's words


def test_another_writer_just_before_the_fast_forward(spark, monkeypatch):
    """Another writer commits after the run's last look at main and before its fast-forward:
    the package's message (today Iceberg's 'Cannot fast-forward: main is not an ancestor'),
    main the other writer's, no branch, no mark of the run."""
    from dbt_merge.spark import MergeError, merge_dataframe
    from dbt_merge.spark import session as spark_session

    table = make(spark, "ff_race", [(1, "a"), (2, "b")])
    original = spark_session.SparkRunner.branch

    def branch(self, relation, action, name, snapshot=None):
        if action == "fast_forward":
            other = threading.Thread(target=lambda: spark.sql(
                f"insert into {table} values (9, 'other')"))
            other.start()
            other.join()
        return original(self, relation, action, name, snapshot)

    monkeypatch.setattr(spark_session.SparkRunner, "branch", branch)
    with pytest.raises(MergeError, match=CONCURRENT):
        merge_dataframe(spark.createDataFrame([(1, "A"), (3, "c")], COLUMNS), table,
                        key_columns="id")
    assert rows_of(spark, table) == [(1, "a"), (2, "b"), (9, "other")]
    assert branches(spark, table) == []
    assert marks(spark, table) == {}


def test_a_rollback_just_before_the_fast_forward_is_kept(spark, monkeypatch):
    """Another job rolls main back to an older snapshot after the run's last look at main and
    before its fast-forward. Iceberg's fast-forward takes any main the branch descends from, so
    the run published over the rollback, undoing it, and reported success (red team helper-43).
    The door now moves main only from the snapshot it read (one compare-and-set commit): the
    package's message, main the rolled-back snapshot, no branch, no mark of the run."""
    from dbt_merge.spark import MergeError, merge_dataframe
    from dbt_merge.spark import session as spark_session

    table = make(spark, "ff_rollback", [(1, "a"), (2, "b")])
    first = main_snapshot(spark, table)
    spark.createDataFrame([(5, "e")], COLUMNS).writeTo(table).append()
    original = spark_session.SparkRunner.branch

    def branch(self, relation, action, name, snapshot=None):
        if action == "fast_forward":
            other = threading.Thread(target=lambda: spark.sql(
                f"call spark_catalog.system.rollback_to_snapshot('{table}', {first})").collect())
            other.start()
            other.join()
        return original(self, relation, action, name, snapshot)

    monkeypatch.setattr(spark_session.SparkRunner, "branch", branch)
    with pytest.raises(MergeError, match=CONCURRENT):
        merge_dataframe(spark.createDataFrame([(1, "A"), (3, "c")], COLUMNS), table,
                        key_columns="id")
    spark.sql(f"refresh table {table}")
    assert main_snapshot(spark, table) == first
    assert rows_of(spark, table) == [(1, "a"), (2, "b")]
    assert branches(spark, table) == []
    assert marks(spark, table) == {}


def test_a_repeated_key_in_a_small_dataframe_leaves_nothing(spark):
    """A key twice in a 3-row DataFrame: the package's message; no branch, no table property
    of the run (today dbt_merge.branch stayed set), the table as it was."""
    from dbt_merge.spark import MergeError, merge_dataframe

    table = make(spark, "small_repeat", [(1, "a"), (2, "b")])
    with pytest.raises(MergeError, match=r"occur more than once in the DataFrame, e\.g\. "
                                         r"\(id\) = \(3\)"):
        merge_dataframe(spark.createDataFrame([(1, "x"), (3, "y"), (3, "z")], COLUMNS), table,
                        key_columns="id")
    assert rows_of(spark, table) == [(1, "a"), (2, "b")]
    assert branches(spark, table) == []
    assert marks(spark, table) == {}


def test_a_format_1_table_set_to_merge_on_read(spark):
    """Iceberg cannot write delete files into a format 1 table: refused with the fix (today
    Spark's 'Deletes are supported in V2 and above'), the table as it was."""
    from dbt_merge.spark import MergeError, merge_dataframe

    table = make(spark, "v1_mor", [(1, "a")], {"format-version": "1", **MOR})
    with pytest.raises(MergeError, match="format version 1 with write.merge.mode=merge-on-read"):
        merge_dataframe(spark.createDataFrame([(1, "b")], COLUMNS), table, key_columns="id")
    assert rows_of(spark, table) == [(1, "a")]


# ------------------------------------------------------------------ item 7: partition transforms


def test_partition_transforms_on_a_new_iceberg_table(spark):
    """partition_by=['bucket(4, id)'] creates an Iceberg table partitioned by that transform
    (today: Couldn't find column bucket(4, id)); a plain column still works; on parquet a
    transform is refused with the fix."""
    from dbt_merge.spark import MergeError, merge_dataframe

    spark.sql(f"create database if not exists {DB}")
    source = spark.createDataFrame([(1, "a"), (2, "b")], COLUMNS)
    for name, partition_by in (("bucketed", ["bucket(4, id)"]), ("by_name", ["name"])):
        table = f"{DB}.{name}"
        spark.sql(f"drop table if exists {table}")
        result = merge_dataframe(source, table, key_columns="id", file_format="iceberg",
                                 partition_by=partition_by, tblproperties=MOR)
        assert counts(result) == (2, 0, 0, 0, 2)
        described = [tuple(r) for r in spark.sql(f"describe {table}").collect()]
        assert (("Part 0", "bucket(4, id)", "") if name == "bucketed"
                else ("# Partition Information", "", "")) in described, described
        result = merge_dataframe(spark.createDataFrame([(2, "B"), (3, "c")], COLUMNS), table,
                                 key_columns="id")
        assert counts(result) == (1, 1, 0, 0, 3)
    spark.sql(f"drop table if exists {DB}.pq_bucketed")
    with pytest.raises(MergeError, match="is an Iceberg partition transform"):
        merge_dataframe(source, f"{DB}.pq_bucketed", key_columns="id", file_format="parquet",
                        partition_by=["bucket(4, id)"])
    assert not spark.catalog.tableExists(f"{DB}.pq_bucketed")


# ------------------------------------------------------------------ dbt: the same, in SQL


@pytest.mark.parametrize("db", ["spark"], indirect=True)
def test_dbt_runs_against_a_stale_cache_another_run_and_history(db, tmp_path):
    """dbt (SQL only, in-process session), one invocation, one model per case:
    - stale: another thread refreshes and reads the table while the model's MERGE into its
      branch runs: the model still counts its own commit;
    - raced: a merge_dataframe into the same table runs to its end when the model's MERGE is
      announced: it leaves the model's branch alone, and the model refuses with the package's
      message (today: its branch dropped, Iceberg's raw error);
    - upgraded: a format 2 merge-on-read table upgraded to 3: right counts;
    - renamed: key and a repeated column swapped by renames after a recorded run: the passes
      refuse the key held twice;
    - ff: another writer commits just before the model's fast-forward: Iceberg's refusal, the
      table the other writer's (the limit of a dbt macro, documented in docs/errors.md);
    - rollback: another job rolls main back just before the fast-forward: the run fails saying
      its fast-forward undid the rollback and how to roll back again;
    - v1: a format 1 table set to merge-on-read: refused with the fix."""
    from dbt_merge.spark import merge_dataframe

    spark = db.engine.spark
    make(spark, "d_stale", [(1, "a"), (2, "b")])
    make(spark, "d_raced", [(1, "a"), (2, "b")])
    make(spark, "d_ff", [(1, "a"), (2, "b")])
    make(spark, "d_rollback", [(1, "a"), (2, "b")])
    make(spark, "d_after", [(1, "a"), (2, "b")])
    rolled_back_to = main_snapshot(spark, f"{DB}.d_rollback")
    spark.createDataFrame([(5, "e")], COLUMNS).writeTo(f"{DB}.d_rollback").append()
    make(spark, "d_v1", [(1, "a")], {"format-version": "1", **MOR})
    make(spark, "d_upgraded", [(i, f"v{i}") for i in range(10)],
         {"format-version": "2", **MOR})
    spark.sql(f"alter table {DB}.d_upgraded set tblproperties ('format-version' = '3')")
    make(spark, "d_renamed", [(1, 5, "a"), (2, 5, "b"), (3, 6, "c")],
         columns="id bigint, k bigint, name string")
    _published_record(spark, f"{DB}.d_renamed", [(1, 5, "a")])
    for sql in ("rename column id to tmp", "rename column k to id", "rename column tmp to k"):
        spark.sql(f"alter table {DB}.d_renamed {sql}")
    renamed = rows_of(spark, f"{DB}.d_renamed")
    two = "select cast(1 as bigint) as id, 'A' as name union all select 3, 'c'"
    models = {
        "d_stale": two,
        "d_raced": two,
        "d_ff": two,
        "d_rollback": two,
        "d_after": two,
        "d_v1": two,
        "d_upgraded": "select cast(1 as bigint) as id, 'x' as name union all select 2, 'y' "
                      "union all select 3, 'v3' union all select 20, 'n'",
        "d_renamed": "select cast(5 as bigint) as id, cast(9 as bigint) as k, 'z' as name "
                     "union all select 6, 3, 'c'",
    }
    root = project(db, tmp_path, "branch_trust", {
        m: ({"schema": DB, "unique_key": "id"}, sql) for m, sql in models.items()})
    reader = StaleReader(spark, f"{DB}.d_stale")
    raced: dict = {}
    others: dict = {}  # the rollback and the later writer (raced is the merge_dataframe's)
    fired: list = []

    def callback(event) -> None:
        if event.info.name != "SQLQuery":
            return
        sql = " ".join(event.data.sql.lower().split())
        if into_branch(sql) and f"{DB}.d_stale.branch_" in sql:
            reader.start()
        if into_branch(sql) and f"{DB}.d_raced.branch_" in sql and not raced:
            raced["branch"] = re.search(r"\.branch_(dbt_merge_\w+)", sql).group(1)
            raced["result"] = merge_dataframe(spark.createDataFrame([(5, "b5")], COLUMNS),
                                              f"{DB}.d_raced", key_columns="id")
            raced["branches"] = branches(spark, f"{DB}.d_raced")
        if "system.fast_forward(" in sql and "d_ff" in sql and not fired:
            fired.append(sql)
            spark.sql(f"insert into {DB}.d_ff values (9, 'other')")
        if f"{DB}.d_after.history" in sql and "after" not in others:
            others["after"] = sql
            spark.sql(f"insert into {DB}.d_after values (9, 'later')")
        if "system.fast_forward(" in sql and "d_rollback" in sql and "rollback" not in others:
            others["rollback"] = sql
            spark.sql(f"call spark_catalog.system.rollback_to_snapshot('{DB}.d_rollback', "
                      f"{rolled_back_to})").collect()

    run = run_dbt(["run", "--threads", "1"], root, "spark", PROFILES_DIR, callbacks=[callback])
    reader.join()
    assert reader.seen is not None
    assert "1 inserted, 1 updated, 0 deleted, 0 unchanged, 3 total" in message(run, "d_stale")
    assert rows_of(spark, f"{DB}.d_stale") == [(1, "A"), (2, "b"), (3, "c")]
    said = message(run, "d_raced")
    assert CONCURRENT in said and "Running the model again is safe" in said, said
    assert raced["branch"] in raced["branches"]
    assert counts(raced["result"]) == (1, 0, 0, 0, 3)
    assert rows_of(spark, f"{DB}.d_raced") == [(1, "a"), (2, "b"), (5, "b5")]
    assert "1 inserted, 2 updated, 0 deleted, 1 unchanged, 11 total" in message(
        run, "d_upgraded")
    said = message(run, "d_renamed")
    assert "already holds 1 extra row(s) for keys of the SELECT" in said, said
    assert rows_of(spark, f"{DB}.d_renamed") == renamed
    # another writer in the instant between the model's last look at main and its
    # fast-forward: Iceberg refuses the fast-forward, atomically (nothing of the run in main),
    # with its own words (a failed statement cannot be caught in a dbt macro; documented), and
    # the run's branch, holding its commit, stays until its name is a day old
    said = message(run, "d_ff")
    assert "Cannot fast-forward: main is not an ancestor of dbt_merge_" in said, said
    assert rows_of(spark, f"{DB}.d_ff") == [(1, "a"), (2, "b"), (9, "other")]
    assert len(branches(spark, f"{DB}.d_ff")) == 1
    # a rollback in that instant: Iceberg's fast-forward takes it (main is an ancestor of the
    # branch) and undid it, success reported (red team helper-43); SQL has no compare-and-set
    # move, so the history read after it says so: the run fails naming the snapshot to roll
    # back to, its commit in main, no branch left
    said = message(run, "d_rollback")
    assert "the fast-forward undid that" in said and str(rolled_back_to) in said, said
    assert rows_of(spark, f"{DB}.d_rollback") == [(1, "A"), (2, "b"), (3, "c"), (5, "e")]
    assert branches(spark, f"{DB}.d_rollback") == []
    # another writer's commit right after the fast-forward, before that read: nothing undone,
    # no refusal (red team helper-47: main's snapshot was taken for the run's head, and the
    # run, failed, told the user to roll back over the other writer's commit)
    assert "after" in others
    assert "1 inserted, 1 updated, 0 deleted, 0 unchanged, 3 total" in message(run, "d_after")
    assert rows_of(spark, f"{DB}.d_after") == [(1, "A"), (2, "b"), (3, "c"), (9, "later")]
    said = message(run, "d_v1")
    assert "format version 1 with write.merge.mode=merge-on-read" in said, said
    assert rows_of(spark, f"{DB}.d_v1") == [(1, "a")]
    for model in set(models) - {"d_ff"}:
        assert branches(spark, f"{DB}.{model}") == [], model


@pytest.mark.parametrize("db", ["spark"], indirect=True)
def test_dbt_refuses_a_target_the_session_caches(db, tmp_path):
    """dbt (session method: the user's SparkSession): the user cached the model's table, then
    another application committed to it (a second Iceberg catalog over the same metastore, which
    the session's cache does not see). The model is refused, naming the table and `uncache
    table`, the table as committed (before: counted from the cached rows, the other
    application's rows in no total; a full_merge reported 2 deletes of 4). Red team r45c A."""
    spark = db.engine.spark
    spark.conf.set("spark.sql.catalog.dbt_merge_other", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.dbt_merge_other.type", "hive")
    spark.conf.set("spark.sql.catalog.dbt_merge_other.cache-enabled", "false")
    models = {"d_cached_mor": MOR, "d_cached_cow": {"write.merge.mode": "copy-on-write"},
              "d_cached_rand": MOR}
    for name, props in models.items():
        make(spark, name, [(1, "a"), (2, "b")], props)
        spark.sql(f"cache table {DB}.{name}")
        spark.sql(f"insert into dbt_merge_other.{DB}.{name} values (10, 'x'), (11, 'y')")
    two = "select cast(1 as bigint) as id, 'A' as name union all select 3, 'c'"
    # d_cached_rand: a non-deterministic SELECT, whose rows are written once to a work table
    # (the stage probe fails analysis; the target is asked by an EXPLAIN of its own)
    rand = "select cast(1 as bigint) as id, case when rand() >= 0 then 'A' end as name"
    root = project(db, tmp_path, "branch_trust_cached", {
        m: ({"schema": DB, "unique_key": "id", "strategy": "full_merge",
             "max_delete_fraction": 1}, rand if m == "d_cached_rand" else two) for m in models})
    try:
        run = run_dbt(["run", "--threads", "1"], root, "spark", PROFILES_DIR)
        for name in models:
            said = message(run, name)
            assert f"the target {DB}.{name} is cached in this Spark session" in said, said
            assert f"uncache table {DB}.{name}" in said, said
            assert spark.catalog.isCached(f"{DB}.{name}")
    finally:
        for name in models:
            spark.sql(f"uncache table if exists {DB}.{name}")
    for name in models:
        spark.sql(f"refresh table {DB}.{name}")
        assert rows_of(spark, f"{DB}.{name}") == [(1, "a"), (2, "b"), (10, "x"), (11, "y")]
        assert branches(spark, f"{DB}.{name}") == []


@pytest.mark.parametrize("db", ["spark"], indirect=True)
def test_dbt_refuses_wap_sessions_it_cannot_check(db, tmp_path):
    """dbt (session method): tables with write.wap.enabled in a session that sets
    spark.wap.branch=main, with spark.wap.branch's value redacted by the user's
    spark.sql.redaction.options.regex. A table set to snapshot isolation is refused before
    anything is written, its new column not added (red team helper-64: Iceberg wrote the MERGE
    straight into main, unchecked, the key held twice; helper-65: a redacted value was taken for
    another branch, the same, and a refusal at the write left the column added); a serializable
    one, which Iceberg checks itself, is merged into main with its counts."""
    spark = db.engine.spark
    props = {"format-version": "2", "write.wap.enabled": "true"}
    make(spark, "d_wap_si", [(1, "a"), (2, "b")],
         {**props, "write.merge.isolation-level": "snapshot"})
    make(spark, "d_wap_serializable", [(1, "a"), (2, "b")], props)
    select = ("select cast(1 as bigint) as id, 'A' as name, 'x' as extra "
              "union all select 3, 'c', 'y'")
    root = project(db, tmp_path, "branch_trust_wap", {
        m: ({"schema": DB, "unique_key": "id", "on_schema_change": "append_new_columns"}, select)
        for m in ("d_wap_si", "d_wap_serializable")})
    spark.conf.set("spark.wap.branch", "main")
    spark.conf.set("spark.sql.redaction.options.regex", "(?i)branch")
    try:
        run = run_dbt(["run", "--threads", "1"], root, "spark", PROFILES_DIR)
    finally:
        spark.conf.unset("spark.wap.branch")
        spark.conf.unset("spark.sql.redaction.options.regex")
    said = message(run, "d_wap_si")
    assert "(redacted by spark.sql.redaction.options.regex: it may be main)" in said, said
    assert "The target was not changed" in said, said
    assert rows_of(spark, f"{DB}.d_wap_si") == [(1, "a"), (2, "b")]
    assert [c.name for c in spark.table(f"{DB}.d_wap_si").schema] == ["id", "name"]
    assert "1 inserted, 1 updated, 0 deleted, 0 unchanged, 3 total" in message(
        run, "d_wap_serializable")
    assert rows_of(spark, f"{DB}.d_wap_serializable") == [(1, "A", "x"), (2, "b", None),
                                                          (3, "c", "y")]
    for model in ("d_wap_si", "d_wap_serializable"):
        assert branches(spark, f"{DB}.{model}") == [], model


@pytest.mark.parametrize("db", ["spark"], indirect=True)
def test_dbt_refuses_a_snapshot_isolation_table_when_the_extensions_are_redacted(db, tmp_path):
    """dbt (session method), a session whose spark.sql.extensions Spark shows redacted (the
    user's spark.sql.redaction.options.regex; variable substitution shows it redacted too): a
    table set to snapshot isolation, which the merge publishes through a branch that needs the
    extensions, is refused before anything is written (red team helper-69: taken for a session
    without them, merged in place, unchecked); a serializable one merges in place as always."""
    spark = db.engine.spark
    make(spark, "d_ext_si", [(1, "a"), (2, "b")],
         {"format-version": "2", "write.merge.isolation-level": "snapshot"})
    make(spark, "d_ext_serializable", [(1, "a"), (2, "b")], {"format-version": "2"})
    select = "select cast(1 as bigint) as id, 'A' as name union all select 3, 'c'"
    root = project(db, tmp_path, "branch_trust_ext", {
        m: ({"schema": DB, "unique_key": "id"}, select)
        for m in ("d_ext_si", "d_ext_serializable")})
    spark.conf.set("spark.sql.redaction.options.regex", r"(?i)sql\.extensions")
    try:
        run = run_dbt(["run", "--threads", "1"], root, "spark", PROFILES_DIR)
    finally:
        spark.conf.unset("spark.sql.redaction.options.regex")
    said = message(run, "d_ext_si")
    assert "this session shows spark.sql.extensions redacted" in said, said
    assert "The target was not changed" in said, said
    assert rows_of(spark, f"{DB}.d_ext_si") == [(1, "a"), (2, "b")]
    assert "1 inserted, 1 updated, 0 deleted, 0 unchanged, 3 total" in message(
        run, "d_ext_serializable")
    assert rows_of(spark, f"{DB}.d_ext_serializable") == [(1, "A"), (2, "b"), (3, "c")]
    for model in ("d_ext_si", "d_ext_serializable"):
        assert branches(spark, f"{DB}.{model}") == [], model


@pytest.mark.parametrize("db", ["spark"], indirect=True)
def test_a_redacted_isolation_level_with_redacted_extensions_is_refused_as_unknown(db, tmp_path):
    """The table's isolation level and the session's extensions both shown redacted: refused,
    the message saying the level is unknown, not that the table is unchecked, and not telling
    the user to make a serializable table serializable (red team helper-70)."""
    spark = db.engine.spark
    make(spark, "d_ext_level", [(1, "a")],
         {"format-version": "2", "write.merge.isolation-level": "serializable"})
    root = project(db, tmp_path, "branch_trust_ext_level", {
        "d_ext_level": ({"schema": DB, "unique_key": "id"},
                        "select cast(1 as bigint) as id, 'A' as name")})
    spark.conf.set("spark.sql.redaction.options.regex", "(?i)(isolation|extensions)")
    try:
        run = run_dbt(["run"], root, "spark", PROFILES_DIR)
    finally:
        spark.conf.unset("spark.sql.redaction.options.regex")
    said = message(run, "d_ext_level")
    assert "'s write.merge.isolation-level is shown redacted (it may be snapshot" in said, said
    assert "neither the setting nor the table's isolation level" in said, said
    assert "to serializable" not in said, said
    assert rows_of(spark, f"{DB}.d_ext_level") == [(1, "a")]
