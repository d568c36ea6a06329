"""merge_history_table on a dataset that cannot take the history row (issue 30 item 12).

The history row was written after the publish: a history table that could not be written (a
table with other columns, a view, a read-only database) failed the call with DuckDB's raw
error, the dataset already merged and no row to say so. Now the history table is checked before
anything is written (refused with a message naming it and the fix), and the row is written in a
transaction committed with the publish: a write that still fails rolls back, nothing published.
Over dbt, see test_dbt_doors.py.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from dbt_merge.parquet import ParquetMergeError, run_merge

from .datasets import fingerprint, read_dataset

HISTORY_COLUMNS = (
    "model_unique_id varchar, strategy varchar, invocation_id varchar, started_at timestamp,"
    " finished_at timestamp, inserted bigint, updated bigint, deleted bigint, unchanged bigint,"
    " held_back bigint, total bigint"
)


def table(ids, value="v") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([value] * len(ids))})


@pytest.fixture
def dataset(tmp_path):
    root = tmp_path / "ds"
    run_merge(table(range(4)), root, "id", durable=False)
    return root


def objects(con) -> list:
    """The connection's tables and views (with their rows) and its settings."""
    tables = con.execute(
        "select database_name, schema_name, table_name, temporary from duckdb_tables() order by all"
    ).fetchall()
    rows = {t: con.execute(f'select * from "{t[0]}"."{t[1]}"."{t[2]}" order by all').fetchall()
            for t in tables}  # fmt: skip
    views = con.execute(
        "select database_name, schema_name, view_name, sql from duckdb_views()"
        " where not internal order by all"
    ).fetchall()
    settings = con.execute("select name, value from duckdb_settings() order by all").fetchall()
    return [tables, rows, views, settings]


@pytest.mark.parametrize(
    ("setup", "name", "message"),
    [
        (
            "create table h (x int)",
            "h",
            'merge_history_table \'h\' ("memory"."main"."h") is not a merge history table:'
            " it lacks the column(s) model_unique_id, strategy",
        ),
        (
            "create view h as select 1 as x",
            "h",
            "merge_history_table 'h' names a view",
        ),
        (
            f"create table h ({HISTORY_COLUMNS}, note varchar not null)",
            "h",
            "has column(s) that cannot be NULL and that the history row does not fill: note",
        ),
        (
            "create schema s",
            "nowhere.h",
            'the schema "memory"."nowhere" does not exist',
        ),
        (
            f"create table h ({HISTORY_COLUMNS}, check (total < 0))",
            "h",
            'the history row could not be written to "memory"."main"."h"',
        ),
    ],
    ids=["other columns", "a view", "a NOT NULL column", "no schema", "a CHECK fails"],
)
def test_a_history_table_that_cannot_be_written_is_refused_first(dataset, setup, name, message):
    con = duckdb.connect()
    con.execute(setup)
    before, state = fingerprint(dataset), objects(con)
    for dry_run in (True, False):
        args = {"connection": con, "merge_history_table": name, "durable": False}

        source = table([0, 9], "new")
        if dry_run and "check (" in setup:
            # only writing the row can tell
            assert run_merge(source, dataset, "id", dry_run=True, **args).stats["dry_run"]
            continue
        with pytest.raises(ParquetMergeError) as err:
            run_merge(source, dataset, "id", dry_run=dry_run, **args)
        text = str(err.value)
        assert message in text, text
        assert text.endswith("The dataset was not changed."), text
        assert fingerprint(dataset) == before and objects(con) == state
    assert not list(dataset.parent.glob(".ds.dbt_merge/tx-*"))


def test_a_read_only_database_is_refused_first(tmp_path, dataset):
    path = tmp_path / "ro.duckdb"
    duckdb.connect(str(path)).close()
    con = duckdb.connect(str(path), read_only=True)
    before = fingerprint(dataset)
    with pytest.raises(ParquetMergeError, match="'ro', which is read-only"):
        run_merge(table([0], "new"), dataset, "id", connection=con, merge_history_table="h")
    assert fingerprint(dataset) == before


def test_an_open_transaction_is_refused_with_history(dataset):
    """The history row is committed with the publish, in a transaction of the merge's own: a
    caller's open transaction (which the caller could roll back after the dataset was
    published) is refused, and left open as it was."""
    con = duckdb.connect()
    con.execute("create table mine (x int)")
    con.begin()
    con.execute("insert into mine values (1)")
    before = fingerprint(dataset)
    with pytest.raises(ParquetMergeError, match="the connection has a transaction open"):
        run_merge(table([0], "new"), dataset, "id", connection=con, merge_history_table="h")
    assert fingerprint(dataset) == before
    assert con.execute("select * from mine").fetchall() == [(1,)]
    con.rollback()
    assert con.execute("select * from mine").fetchall() == []


def test_the_row_is_written_with_the_publish(dataset):
    con = duckdb.connect()
    report = run_merge(
        table([0, 9], "new"), dataset, "id", connection=con, merge_history_table="main.h"
    )
    assert report.stats["inserted"] == 1 and report.stats["updated"] == 1
    rows = con.execute("select strategy, inserted, updated, total from h").fetchall()
    assert rows == [("upsert", 1, 1, 5)]
    _, got = read_dataset(dataset)
    assert len(got) == 5
