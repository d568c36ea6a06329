"""merge_table (dbt_merge.duckdb) on an in-memory DuckDB connection: the strategies (rows and
statistics), each kind of source, a refused merge and a merge failing in its write (message,
target unchanged), and the call as a guest on the caller's connection (no transaction,
temporary table or view left, settings as they were). The differential slice is
tests/reliability/test_merge_table.py."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from dbt_merge.duckdb import MergeError, MergeResult, merge_table

TARGET = [(1, "a", 1), (2, "b", 1), (3, "c", 1)]
SOURCE = [(1, "a", 1), (2, "B", 2), (4, "d", 1)]
EXPECTED = {  # strategy -> (rows after, inserted, updated, deleted, unchanged)
    "upsert": ([(1, "a", 1), (2, "B", 2), (3, "c", 1), (4, "d", 1)], 1, 1, 0, 1),
    "insert": ([(1, "a", 1), (2, "b", 1), (3, "c", 1), (4, "d", 1)], 1, 0, 0, 2),  # matched: kept
    "update": ([(1, "a", 1), (2, "B", 2), (3, "c", 1)], 0, 1, 0, 1),
    "full_merge": ([(1, "a", 1), (2, "B", 2), (4, "d", 1)], 1, 1, 1, 1),
    "deduplicate": ([(1, "a", 1), (2, "B", 2), (3, "c", 1), (4, "d", 1)], 1, 1, 0, 1),
}


@pytest.fixture
def con():
    con = duckdb.connect()
    con.execute("create schema analytics")
    con.execute("create table analytics.t (id integer, name varchar, updated_at integer)")
    con.executemany("insert into analytics.t values (?, ?, ?)", TARGET)
    yield con
    con.close()


def _rows(con) -> list[tuple]:
    return con.execute("select * from analytics.t order by id").fetchall()


def _state(con) -> dict:
    """What a guest must leave as it was: the settings, the temporary tables and views, the
    tables, and no open transaction."""
    try:
        con.begin()
        con.rollback()
        open_transaction = False
    except duckdb.TransactionException:
        open_transaction = True
    return {
        "settings": con.execute("select name, value from duckdb_settings() order by name")
        .fetchall(),
        "temporary": con.execute(
            "select table_name from duckdb_tables() where temporary union all "
            "select view_name from duckdb_views() where temporary and not internal"
        ).fetchall(),
        "tables": con.execute("select schema_name, table_name from duckdb_tables() "
                              "order by all").fetchall(),
        "open_transaction": open_transaction,
    }


def _source(con) -> pa.Table:
    return pa.table({"id": pa.array([r[0] for r in SOURCE], pa.int32()),
                     "name": [r[1] for r in SOURCE], "updated_at": [r[2] for r in SOURCE]})


@pytest.mark.parametrize("strategy", sorted(EXPECTED))
def test_strategies(con, strategy):
    rows, inserted, updated, deleted, unchanged = EXPECTED[strategy]
    before = _state(con)
    options = {"dedup_order_by": "updated_at desc"} if strategy == "deduplicate" else {}
    if strategy == "full_merge":
        options["max_delete_fraction"] = 0.5
    result = merge_table(con, _source(con), "analytics.t", "id", strategy, **options)
    assert isinstance(result, MergeResult)
    assert result.as_dict() == {"inserted": inserted, "updated": updated, "deleted": deleted,
                                "unchanged": unchanged, "total": len(rows)}
    assert _rows(con) == rows
    assert _state(con) == before


def test_each_source_kind(con):
    """An Arrow table, a relation of the connection, a query: the same merge."""
    query = "select * from (values (2, 'B', 2), (4, 'd', 1)) v(id, name, updated_at)"
    expected = [(1, "a", 1), (2, "B", 2), (3, "c", 1), (4, "d", 1)]
    before = _state(con)
    for source in (_source(con).slice(1), con.sql(query), query):
        con.execute("delete from analytics.t")
        con.executemany("insert into analytics.t values (?, ?, ?)", TARGET)
        result = merge_table(con, source, "analytics.t", key_columns=["id"])
        assert result.as_dict() == {"inserted": 1, "updated": 1, "deleted": 0, "unchanged": 0,
                                    "total": 4}, type(source)
        assert _rows(con) == expected, type(source)
        assert _state(con) == before, type(source)


def test_table_of_the_current_schema(con):
    con.execute("use analytics")
    result = merge_table(con, _source(con), "t", "id")
    assert (result.inserted, result.updated, result.total) == (1, 1, 4)
    assert _rows(con) == EXPECTED["upsert"][0]


def test_target_in_schema_and_first_merge_creates_it(con):
    before = _state(con)
    result = merge_table(con, _source(con), "analytics.new_t", "id",
                         merge_check_columns=["updated_at"])
    assert result.as_dict() == {"inserted": 3, "updated": 0, "deleted": 0, "unchanged": 0,
                                "total": 3}
    assert con.execute("select * from analytics.new_t order by id").fetchall() == SOURCE
    again = merge_table(con, _source(con), "memory.analytics.new_t", "id", dry_run=True)
    assert again.as_dict() == {"inserted": 0, "updated": 0, "deleted": 0, "unchanged": 3,
                               "total": 3, "dry_run": True}
    assert _state(con)["temporary"] == before["temporary"] == []


def test_refused_merge_leaves_the_target(con):
    """Duplicate keys: the catalogue's message, in the source's wording; the target as it was."""
    before, rows = _state(con), _rows(con)
    with pytest.raises(MergeError) as error:
        merge_table(con, "select 1 as id, 'x' as name, 1 as updated_at union all "
                         "select 1, 'y', 2", "analytics.t", "id")
    assert str(error.value).startswith("dbt_merge: table 'analytics.t': 1 key value(s) "
                                       "occur more than once in the source, e.g. (id) = (1)")
    assert "The target was not changed." in str(error.value)
    assert _rows(con) == rows and _state(con) == before


def test_bad_option_names_the_option(con):
    with pytest.raises(MergeError, match="strategy 'upsrt' is not one of: upsert, insert"):
        merge_table(con, _source(con), "analytics.t", "id", "upsrt")
    with pytest.raises(MergeError, match="the schema 'memory.nowhere' does not exist"):
        merge_table(con, _source(con), "nowhere.t", "id")
    # the Python doors' one option table: a misspelt keyword gets the closest name, and an
    # option that shapes a Spark table is refused with the reason; the target as it was
    before, rows = _state(con), _rows(con)
    with pytest.raises(MergeError, match="unknown option 'dry_rnu' \\(did you mean 'dry_run'"):
        merge_table(con, _source(con), "analytics.t", "id", dry_rnu=True)
    with pytest.raises(MergeError, match="partition_by='id' shapes a Spark table"):
        merge_table(con, _source(con), "analytics.t", "id", partition_by="id")
    assert _rows(con) == rows and _state(con) == before


def test_failure_in_the_write_rolls_back(con):
    """A constraint the write breaks (after the statistics, inside the write): the engine's
    error, and the target, the history and the connection exactly as they were."""
    con.execute("create table analytics.c (id integer primary key, name varchar not null, "
                "updated_at integer)")
    con.executemany("insert into analytics.c values (?, ?, ?)", TARGET)
    before = _state(con)
    with pytest.raises(duckdb.ConstraintException):
        merge_table(con, "select 2 as id, null::varchar as name, 5 as updated_at union all "
                         "select 9, 'n', 1", "analytics.c", "id",
                    merge_history_table="analytics.merge_history")
    assert con.execute("select * from analytics.c order by id").fetchall() == TARGET
    assert _state(con) == before  # no history table either: it was created in the transaction


def test_refuses_an_open_transaction(con):
    con.begin()
    con.execute("insert into analytics.t values (7, 'g', 1)")
    with pytest.raises(MergeError, match="has a transaction open"):
        merge_table(con, _source(con), "analytics.t", "id")
    assert (7, "g", 1) in _rows(con)  # the caller's transaction goes on, untouched
    con.rollback()
    assert _rows(con) == TARGET


def test_settings_of_the_caller_are_kept(con):
    """The caller's own settings (a time zone, a thread count) are used and left as they were."""
    con.execute("set TimeZone = 'America/New_York'")
    con.execute("set threads = 1")
    before = _state(con)
    merge_table(con, _source(con), "analytics.t", "id", merge_history_table="merge_history")
    assert _state(con)["settings"] == before["settings"]
    assert con.execute("select strategy, inserted, updated from analytics.merge_history"
                       ).fetchall() == [("upsert", 1, 1)]
