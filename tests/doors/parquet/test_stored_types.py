"""Issue 21, classes 1, 2, 6, 7 on the Python API: types a Parquet file stores differently,
statistics of a column whose printed path collides with a nested field's, glob characters in
the dataset's path, and datasets whose files disagree in schema."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dbt_merge import ParquetMergeError
from dbt_merge.parquet import merge_with_report as run_merge
from dbt_merge.parquet import schema, types

from .datasets import fingerprint

NO_CHANGE = {"inserted": 0, "updated": 0, "deleted": 0}


def merge(con, select: str, root: Path, key="id", **kwargs):
    return run_merge(con.sql(select), root, key, connection=con, durable=False, **kwargs)


def dataset(root: Path) -> tuple[list[tuple], list[tuple]]:
    """(column name and type, sorted rows) as a reader of `root/**/*.parquet` sees them."""
    con = duckdb.connect()
    relation = f"read_parquet('{root}/**/*.parquet', union_by_name = true)"
    types = [(r[0], r[1]) for r in con.execute(f"describe select * from {relation}").fetchall()]
    rows = sorted(con.execute(f"select * from {relation}").fetchall(), key=repr)
    con.close()
    return types, rows


def changed(stats: dict) -> dict:
    return {k: stats[k] for k in NO_CHANGE}


def test_hugeint_keys_and_values_are_stored_exactly(tmp_path):
    """Two keys one apart above 2^53 were one DOUBLE key in the files (2 inserted, then a
    duplicate); sum(bigint) is HUGEINT, so an ordinary model hit this. Stored as DECIMAL(38,0)
    now, on the first build and every later merge."""
    con, root = duckdb.connect(), tmp_path / "ds"
    select = (
        "select * from (values (18446744073709551616::hugeint, 12345678901234567890123::hugeint),"
        " (18446744073709551617::hugeint, 5::hugeint)) as t(id, v)"
    )
    assert merge(con, select, root).stats["inserted"] == 2
    types, rows = dataset(root)
    assert types == [("id", "DECIMAL(38,0)"), ("v", "DECIMAL(38,0)")]
    assert rows == [
        (Decimal(18446744073709551616), Decimal(12345678901234567890123)),
        (Decimal(18446744073709551617), Decimal(5)),
    ]
    before = fingerprint(root)
    again = merge(con, select, root).stats
    assert changed(again) == NO_CHANGE and again["unchanged"] == 2
    assert fingerprint(root) == before
    update = "select 18446744073709551617::hugeint as id, 6::hugeint as v"
    assert merge(con, update, root).stats == {
        "inserted": 0,
        "updated": 1,
        "deleted": 0,
        "unchanged": 0,
        "total": 2,
    }


def test_a_hugeint_too_large_for_decimal_38_is_refused(tmp_path):
    con, root = duckdb.connect(), tmp_path / "ds"
    merge(con, "select 1 as id, 1::hugeint as v", root)
    before = fingerprint(root)
    with pytest.raises(ParquetMergeError) as err:
        merge(con, "select 2 as id, 170141183460469231731687303715884105727::hugeint as v", root)
    message = str(err.value)
    assert "column 'v' has type HUGEINT, which Parquet stores as DOUBLE" in message
    assert "e.g. 170141183460469231731687303715884105727" in message
    assert "Cast it to DOUBLE (rounded) or VARCHAR in the source." in message
    assert message.endswith("The dataset was not changed.")
    assert fingerprint(root) == before


def test_interval_timetz_and_fixed_arrays_are_judged_as_stored(tmp_path):
    """INTERVAL (milliseconds), TIME WITH TIME ZONE (normalised to UTC) and FLOAT[3] (a LIST in
    the file) made every run 'updated' or the second run refused forever."""
    con, root = duckdb.connect(), tmp_path / "ds"
    select = (
        "select 1 as id, interval '1 second 5 milliseconds' as i, '10:00:00+02'::timetz as t,"
        " [1.5, 2.5, 3.5]::float[3] as e, {'a': [1, 2]::int[2]} as s"
    )
    assert merge(con, select, root).stats["inserted"] == 1
    types, _ = dataset(root)
    assert dict(types)["e"] == "FLOAT[]" and dict(types)["s"] == "STRUCT(a INTEGER[])"
    before = fingerprint(root)
    again = merge(con, select, root).stats
    assert changed(again) == NO_CHANGE and again["unchanged"] == 1
    assert fingerprint(root) == before
    # the same instant at another offset is the value the file holds: unchanged
    same = select.replace("'10:00:00+02'", "'09:00:00+01'")
    assert merge(con, same, root).stats["unchanged"] == 1


def test_timetz_keys_equal_as_stored_are_duplicates(tmp_path):
    con, root = duckdb.connect(), tmp_path / "ds"
    select = "select '10:00:00+02'::timetz as id, 1 as v union all select '08:00:00+00'::timetz, 2"
    with pytest.raises(ParquetMergeError, match="occur more than once in the source"):
        merge(con, select, root)
    assert not root.exists()


@pytest.mark.parametrize(
    "expression, message",
    [
        (
            "interval '1 second 5 microseconds'",
            "column 'v' has type INTERVAL, which Parquet stores in milliseconds, and a value has "
            "microseconds (e.g. 00:00:01.000005). Round it to milliseconds",
        ),
        (
            "union_value(a := 1)::union(a int, b varchar)",
            "column 'v' has type UNION(a INTEGER, b VARCHAR), which a Parquet file stores as a "
            "STRUCT with a tag",
        ),
        (
            "{'a': 1::hugeint}",
            "column 'v' has type STRUCT(a HUGEINT), and a Parquet file does not store the HUGEINT "
            "inside it exactly. Cast that field to DECIMAL(38,0) or BIGINT",
        ),
    ],
)
def test_types_that_do_not_round_trip_are_refused(tmp_path, expression, message):
    con, root = duckdb.connect(), tmp_path / "ds"
    merge(con, "select 1 as id, null::int as v", root)  # a dataset the refusal leaves alone
    before = fingerprint(root)
    with pytest.raises(ParquetMergeError) as err:
        merge(con, f"select 1 as id, {expression} as v", root, full_refresh=True)
    assert message in str(err.value)
    assert fingerprint(root) == before
    # and on a first build: nothing written
    with pytest.raises(ParquetMergeError):
        merge(con, f"select 1 as id, {expression} as v", tmp_path / "new")
    assert not (tmp_path / "new").exists()


def test_pruning_reads_the_key_column_not_a_nested_field_printed_alike(tmp_path):
    """The statistics of field y of struct x and of a top-level column "x, y" both print as
    `x, y`; the file holding the key was pruned and the key inserted twice."""
    con, root = duckdb.connect(), tmp_path / "ds"
    root.mkdir()
    con.execute(f"""copy (select 1 as id, {{'y': 200}} as x, 100 as "x, y")
                    to '{root}/f1.parquet'""")
    con.execute(f"""copy (select 2 as id, {{'y': 5}} as x, 5 as "x, y") to '{root}/f2.parquet'""")
    report = merge(con, """select 3 as id, {'y': 7} as x, 100 as "x, y" """, root, key=["x, y"])
    assert report.stats == {"inserted": 0, "updated": 1, "deleted": 0, "unchanged": 0, "total": 2}
    assert dataset(root)[1] == [(2, {"y": 5}, 5), (3, {"y": 7}, 100)]


def test_pruning_tells_a_key_from_a_nested_field_named_alike_in_another_case(tmp_path):
    """Field B of struct A prints as `A, B`, a top-level column "a, b" as `a, b`: the lookup
    ignored case, so the nested field's statistics pruned the file holding the key."""
    con, root = duckdb.connect(), tmp_path / "ds"
    root.mkdir()
    con.execute(f"""copy (select {{'B': 900}} as "A", 1 as "a, b") to '{root}/f1.parquet'""")
    con.execute(f"""copy (select {{'B': 1}} as "A", 50 as "a, b") to '{root}/f2.parquet'""")
    report = merge(con, """select {'B': 3} as "A", 1 as "a, b" """, root, key=["a, b"])
    assert report.stats == {"inserted": 0, "updated": 1, "deleted": 0, "unchanged": 0, "total": 2}
    assert dataset(root)[1] == [({"B": 1}, 50), ({"B": 3}, 1)]


def test_a_file_without_a_later_column_reads_it_as_null(tmp_path):
    """An older file lacks column w: every merge failed with a raw BinderException."""
    root = tmp_path / "ds"
    root.mkdir()
    pq.write_table(pa.table({"id": [1, 2], "v": [10, 20]}), root / "old.parquet")
    pq.write_table(pa.table({"id": [3], "v": [30], "w": ["x"]}), root / "new.parquet")
    source = pa.table({"id": [1, 4], "v": [11, 40], "w": ["y", "z"]})
    report = run_merge(source, root, "id", durable=False)
    assert report.stats == {"inserted": 1, "updated": 1, "deleted": 0, "unchanged": 0, "total": 4}
    assert dataset(root)[1] == [(1, 11, "y"), (2, 20, None), (3, 30, "x"), (4, 40, "z")]
    # old.parquet was rewritten; the files written hold every column
    written = [p for p in root.glob("*.parquet") if p.name != "new.parquet"]
    assert not (root / "old.parquet").exists() and len(written) == 2
    assert all(pq.read_schema(p).names == ["id", "v", "w"] for p in written)
    again = run_merge(source, root, "id", durable=False).stats
    assert changed(again) == NO_CHANGE


def test_a_narrower_type_in_an_older_file_is_widened(tmp_path):
    """Not refused as a conflict: int32 and float32 read back exactly as int64 and double."""
    root = tmp_path / "ds"
    root.mkdir()
    pq.write_table(
        pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array([1.5, 2.5], pa.float32())}),
        root / "old.parquet",
    )
    pq.write_table(pa.table({"id": [3], "v": [3.25]}), root / "new.parquet")
    source = pa.table({"id": [2, 5], "v": [9.0, 5.0]})
    assert run_merge(source, root, "id", durable=False).stats["updated"] == 1
    assert dataset(root)[1] == [(1, 1.5), (2, 9.0), (3, 3.25), (5, 5.0)]


def test_files_whose_types_conflict_are_refused_naming_them(tmp_path):
    root = tmp_path / "ds"
    root.mkdir()
    pq.write_table(pa.table({"id": [1, 2], "v": [10, 20]}), root / "a.parquet")
    pq.write_table(pa.table({"id": [3], "v": ["30"]}), root / "b.parquet")
    before = fingerprint(root)
    with pytest.raises(ParquetMergeError) as err:
        run_merge(pa.table({"id": [1], "v": ["11"]}), root, "id", durable=False)
    message = str(err.value)
    assert "the dataset's files disagree on the type of column 'v'" in message
    assert "they give VARCHAR" in message and "a.parquet (BIGINT)" in message
    assert "with full_refresh=True. " in message
    assert fingerprint(root) == before
    # the fix the message names
    fixed = run_merge(pa.table({"id": [1], "v": ["11"]}), root, "id", full_refresh=True)
    assert fixed.stats["total"] == 1 and dataset(root)[1] == [(1, "11")]


@pytest.mark.parametrize("name", ["d[1]", "d*", "d?", "d{a,b}"])
def test_a_path_with_a_glob_character_is_refused_before_anything_is_written(tmp_path, name):
    with pytest.raises(ParquetMergeError, match=r"has a glob character") as err:
        run_merge(pa.table({"id": [1]}), tmp_path / name, "id")
    assert "Choose a path without * ? [ {. The dataset was not changed." in str(err.value)
    assert list(tmp_path.iterdir()) == []  # no dataset, no work folder


# ---------------------------------------------------------------- pure functions


def test_stored_decides_per_type():
    assert types.stored("v", "BIGINT") is None and types.stored("v", "TIMESTAMP") is None
    huge = types.stored("v", "HUGEINT")
    assert huge.dtype == "DECIMAL(38,0)" and huge.check is not None
    assert types.stored("v", "TIME WITH TIME ZONE").expression == "timezone('UTC', {c})"
    assert types.stored("v", "FLOAT[384]").dtype == "FLOAT[]"
    assert (
        types.stored("v", "STRUCT(a INTEGER[2], b VARCHAR)").dtype
        == "STRUCT(a INTEGER[], b VARCHAR)"
    )
    # a field *named* like a type or an array is not one
    assert types.stored("v", 'STRUCT("interval" INTEGER, "a[2]" VARCHAR)') is None
    assert types.stored("v", 'STRUCT("a[2]" INTEGER[3])').dtype == 'STRUCT("a[2]" INTEGER[])'
    assert "Cast it to one of its member types" in types.stored("v", "UNION(a INTEGER)")
    assert "TIME or VARCHAR" in types.stored("v", "STRUCT(t TIME WITH TIME ZONE)")


def test_top_level_columns_counts_leaves_through_nesting():
    # root(4): a INT, s STRUCT(x INT, l LIST(INT)), "s, x" INT, m MAP(VARCHAR, INT)
    rows = [
        ("f", "schema", None, 4, None),
        ("f", "a", "INT32", None, "INTEGER"),
        ("f", "s", None, 2, "STRUCT(...)"),
        ("f", "x", "INT32", None, "INTEGER"),
        ("f", "l", None, 1, "INTEGER[]"),
        ("f", "list", None, 1, None),
        ("f", "element", "INT32", None, "INTEGER"),
        ("f", "s, x", "INT32", None, "INTEGER"),
        ("f", "m", None, 1, "MAP(VARCHAR, INTEGER)"),
        ("f", "key_value", None, 2, None),
        ("f", "key", "BYTE_ARRAY", None, "VARCHAR"),
        ("f", "value", "INT32", None, "INTEGER"),
    ]
    columns = schema.top_level_columns(rows)["f"]
    assert [(c.name, c.leaf) for c in columns] == [("a", 0), ("s", None), ("s, x", 3), ("m", None)]
    assert schema.find(columns, "S, X").leaf == 3
    assert schema.find(columns, "nope") is None
    twice = [schema.FileColumn("Id", "BIGINT", 0), schema.FileColumn("ID", "BIGINT", 1)]
    assert schema.find(twice, "id") is False and schema.find(twice, "ID").leaf == 1


def test_widens_only_exactly():
    assert schema.widens("INTEGER", "BIGINT") and schema.widens("FLOAT", "DOUBLE")
    assert schema.widens("UINTEGER", "BIGINT") and not schema.widens("UBIGINT", "BIGINT")
    assert not schema.widens("BIGINT", "DOUBLE") and not schema.widens("BIGINT", "VARCHAR")
    assert schema.widens("DATE", "TIMESTAMP") and not schema.widens("TIMESTAMP", "DATE")


def test_a_deferred_merge_changes_nothing_until_published(tmp_path):
    root = tmp_path / "ds"
    run_merge(pa.table({"id": [1], "v": ["a"]}), root, "id", durable=False)
    before = fingerprint(root)
    report = run_merge(
        pa.table({"id": [1, 2], "v": ["b", "c"]}), root, "id", durable=False, defer_publish=True
    )
    assert report.stats["updated"] == 1 and fingerprint(root) == before
    # the new state is readable before it is published
    con = duckdb.connect()
    files = [path for path, _ in report.pending.files]
    assert sorted(con.execute("select * from read_parquet(?)", [files]).fetchall()) == [
        (1, "b"),
        (2, "c"),
    ]
    report.pending.abort()
    assert fingerprint(root) == before
    assert not list(tmp_path.glob(".ds.dbt_merge/tx-*"))
    # the lock is released: the next merge runs, deferred then published
    again = run_merge(
        pa.table({"id": [1, 2], "v": ["b", "c"]}), root, "id", durable=False, defer_publish=True
    )
    again.pending.publish()
    assert dataset(root)[1] == [(1, "b"), (2, "c")]
