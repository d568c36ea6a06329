"""Soft deletes on a dataset (issue 30 item 14): starting them on an existing dataset as the docs
say (soft_delete_column with on_schema_change='append_new_columns', the columns not in the
dataset yet), and one deletion time per merge.

Before the fix: without the columns in the source, the merge was refused with a message asking
for the option already set; with them in the source, DuckDB's raw Binder Error (the dataset's
rows were read without the columns being added). And each rewritten file was stamped with its
own `current_timestamp` (one statement per file): a merge rewriting 20 files left 20 deletion
times.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import duckdb
import pyarrow as pa
from dbt_merge.parquet import merge_with_report as run_merge
from support.reference import Options, canonical, merge

from .datasets import fingerprint, read_dataset

TS = pa.timestamp("us")


def ids(n: int, value: str = "a") -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array([value] * n)})


def build(root: Path, n: int, rows_per_file: int = 1_000_000) -> None:
    report = run_merge(ids(n), root, "id", rows_per_file=rows_per_file, durable=False)
    assert report.stats["inserted"] == n


def soft_options(**extra):
    return {
        "strategy": "full_merge",
        "soft_delete_column": "gone",
        "soft_delete_timestamp_column": "gone_at",
        "on_schema_change": "append_new_columns",
        "max_delete_fraction": 1,
        "durable": False,
        **extra,
    }


def test_starting_soft_deletes_on_an_existing_dataset(tmp_path):
    """The source without the soft-delete columns (added live: false, NULL): rows and
    statistics as the reference model gives for a dataset whose rows read NULL in the new
    column (as ALTER TABLE ADD COLUMN leaves a table)."""
    root = tmp_path / "ds"
    build(root, 6, rows_per_file=2)
    source = pa.table({"id": pa.array([0, 1, 2, 3, 9], pa.int64()), "v": ["a", "b", "a", "a", "n"]})
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    started = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    report = run_merge(source, root, "id", connection=con, **soft_options())
    finished = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    target = [{"id": i, "v": "a", "gone": None} for i in range(6)]
    rows, stats = merge(
        "full_merge",
        [{**r, "gone": False} for r in source.to_pylist()],
        target,
        ["id"],
        Options(soft_delete="gone", max_delete_fraction=1),
    )
    assert report.stats == stats.as_dict()
    names, got = read_dataset(root)
    assert names == ["id", "v", "gone", "gone_at"]
    assert canonical(got, ["id", "v", "gone"]) == canonical(rows, ["id", "v", "gone"])
    stamps = {r["gone_at"] for r in got if r["gone"]}
    assert len(stamps) == 1 and started <= next(iter(stamps)) <= finished, stamps
    assert all(r["gone_at"] is None for r in got if not r["gone"])
    # the next merge: nothing changed, nothing rewritten, the deleted rows stay deleted
    before = fingerprint(root)
    again = run_merge(source, root, "id", connection=con, **soft_options())
    assert (again.stats["updated"], again.stats["deleted"], again.stats["inserted"]) == (0, 0, 0)
    assert fingerprint(root) == before


def test_the_soft_delete_columns_in_the_source_are_added_too(tmp_path):
    root = tmp_path / "ds"
    build(root, 4)
    source = pa.table(
        {
            "id": pa.array([0, 1, 2], pa.int64()),
            "v": ["a", "b", "a"],
            "gone": [False, False, True],
            "gone_at": pa.array([None, None, None], TS),
        }
    )
    report = run_merge(source, root, "id", **soft_options())
    assert report.stats == {"inserted": 0, "updated": 3, "deleted": 1, "unchanged": 0, "total": 4}
    _, got = read_dataset(root)
    by_id = {r["id"]: r for r in got}
    assert [by_id[i]["gone"] for i in range(4)] == [False, False, True, True]
    assert by_id[3]["gone_at"] is not None and by_id[2]["gone_at"] is None


def test_one_merge_stamps_one_deletion_time(tmp_path):
    """40 rows in 20 files, 39 deleted: one time, the merge's."""
    root = tmp_path / "ds"
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    source = ids(40).append_column("gone", pa.array([False] * 40))
    source = source.append_column("gone_at", pa.array([None] * 40, TS))
    run_merge(source, root, "id", rows_per_file=2, durable=False)
    assert len(list(root.glob("*.parquet"))) == 20
    started = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    report = run_merge(source.slice(0, 1), root, "id", connection=con, **soft_options())
    finished = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    assert report.stats["deleted"] == 39 and len(report.files_removed) == 20
    _, got = read_dataset(root)
    stamps = {r["gone_at"] for r in got if r["gone"]}
    assert len(stamps) == 1, sorted(stamps)
    assert started <= next(iter(stamps)) <= finished


# ------------------------------------------------- the dataset's own soft-delete column types


def _two_files(root: Path, flag: str, stamp: str) -> None:
    con = duckdb.connect()
    for n, rows in enumerate(("(1, 'a'), (2, 'b')", "(3, 'c'), (4, 'd')")):
        live = "null" if flag == "date" else "false"
        con.execute(f"copy (select id, v, {live}::{flag} as flag, null::{stamp} as ts from "
                    f"(values {rows}) t(id, v)) to '{root}/part-{n}.parquet'")


def test_a_date_or_string_deleted_at_keeps_its_type_in_every_file(tmp_path):
    """Red team helper-46: a soft delete stamped a DATE (or VARCHAR) deleted_at of a dataset
    with the merge's TIMESTAMP, so the file rewritten held a timestamp and the untouched one a
    date: a dataset of mixed types (a VARCHAR one failed on DuckDB's binder error). The stamp is
    now cast to the column's type, as a table's UPDATE stores it."""
    import pyarrow.parquet as pq
    from dbt_merge.parquet import merge_parquet_dataset

    for stamp, arrow_type in (("date", pa.date32()), ("varchar", pa.string())):
        root = tmp_path / stamp
        root.mkdir()
        _two_files(root, "boolean", stamp)
        result = merge_parquet_dataset(
            pa.table({"id": [1, 3, 4], "v": ["a", "c", "d"]}), str(root), "id", "full_merge",
            soft_delete_column="flag", soft_delete_timestamp_column="ts", max_delete_fraction=1)
        assert (result["deleted"], result["unchanged"], result["total"]) == (1, 3, 4)
        types = {pq.read_schema(f).field("ts").type for f in root.rglob("*.parquet")}
        assert types == {arrow_type}, (stamp, types)
        stamped = [r for r in duckdb.sql(f"select id, ts from read_parquet('{root}/**/*.parquet')"
                                         ).fetchall() if r[1] is not None]
        assert [r[0] for r in stamped] == [2], stamped
        if stamp == "date":
            assert stamped[0][1] == datetime.date.today() or (
                datetime.date.today() - stamped[0][1]).days <= 1


def test_a_soft_delete_column_of_a_type_the_merge_cannot_use_is_refused(tmp_path):
    """Red team helper-46: a VARCHAR or DATE flag failed on DuckDB's binder error. Refused naming
    the column, its type and the fix; the dataset as it was."""
    from dbt_merge.parquet import ParquetMergeError, merge_parquet_dataset

    for flag in ("varchar", "date"):
        root = tmp_path / flag
        root.mkdir()
        _two_files(root, flag, "timestamp")
        before = fingerprint(root)
        try:
            merge_parquet_dataset(pa.table({"id": [1], "v": ["a"]}), str(root), "id",
                                  "full_merge", soft_delete_column="flag",
                                  max_delete_fraction=1)
        except ParquetMergeError as error:
            said = str(error)
        else:
            raise AssertionError(f"{flag}: merged")
        assert f"soft_delete_column 'flag' is {flag.upper()}" in said, said
        assert "must be BOOLEAN" in said, said
        assert fingerprint(root) == before
