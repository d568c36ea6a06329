"""Issue 21, classes 1, 2, 6, 7 on the Python API: types a Parquet file stores differently,
statistics of a column whose printed path collides with a nested field's, glob characters in
the dataset's path, and datasets whose files disagree in schema."""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import numpy as np
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


#: 44 digits, which a DOUBLE rounds
WIDE = Decimal("12345678901234567890123456789012345678901.123")


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize(
    "column, field",
    [
        (pa.array([WIDE, Decimal("1.001")], pa.decimal256(50, 3)), None),
        (pa.array([{"a": WIDE}, None], pa.struct([("a", pa.decimal256(45, 3))])), "a"),
        (pa.array([[{"v": WIDE}], None], pa.list_(pa.struct([("v", pa.decimal256(45, 3))]))),
         "v"),
    ],
    ids=["column", "field", "field named like its column"],
)
def test_a_file_decimal_wider_than_38_digits_is_refused(tmp_path, column, field, dry_run):
    """Another tool's file with a DECIMAL of more than 38 digits (pyarrow's decimal256): DuckDB
    reads it as DOUBLE, rounded, and a merge that rewrote the file wrote 1.2345678901234568e+40
    for the row it did not touch, as DOUBLE, reporting success. Refused, naming the file and the
    column (or the field in it), the files as they were; on a dry run too."""
    root = tmp_path / "ds"
    root.mkdir()
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "v": column}),
                   root / "other-tool.parquet")
    before = fingerprint(root)
    con = duckdb.connect()
    source = pa.table({"id": pa.array([2, 3], pa.int64())})
    with pytest.raises(ParquetMergeError) as raised:
        run_merge(source, root, "id", connection=con, durable=False, dry_run=dry_run)
    held = "column 'v'" if field is None else f"a field '{field}' of column 'v'"
    assert (
        f"the dataset's file other-tool.parquet stores {held} as DECIMAL("
        in str(raised.value)
    )
    assert "DuckDB reads it as DOUBLE, rounded" in str(raised.value)
    assert str(raised.value).endswith("The dataset was not changed.")
    assert fingerprint(root) == before


def test_a_source_file_decimal_wider_than_38_digits_is_refused(tmp_path):
    """A source file with such a decimal was merged as its rounded DOUBLE values, and an Arrow
    source with a decimal256 column gave DuckDB's raw NotImplementedException."""
    wide = pa.table({"id": pa.array([1], pa.int64()),
                     "v": pa.array([WIDE], pa.decimal256(50, 3))})
    pq.write_table(wide, tmp_path / "source.parquet")
    con, root = duckdb.connect(), tmp_path / "ds"
    with pytest.raises(ParquetMergeError, match=(
        r"the source file .*source\.parquet stores column 'v' as DECIMAL\(50,3\), more digits "
        r"than DuckDB's DECIMAL holds \(38\).* Nothing was changed\.$"
    )):
        run_merge(str(tmp_path / "source.parquet"), root, "id", connection=con, durable=False)
    with pytest.raises(ParquetMergeError, match=(
        r"the source's column 'v' is an Arrow decimal256\(50, 3\), which DuckDB does not read\. "
        r"Cast it to a decimal128 of at most 38 digits, or to a string, first\. Nothing was "
        r"changed\.$"
    )):
        run_merge(wide, root, "id", connection=con, durable=False)
    narrow = pa.table({"id": pa.array([1], pa.int64()),
                       "v": pa.array([[Decimal("1.5")]], pa.list_(pa.decimal256(20, 3)))})
    with pytest.raises(ParquetMergeError, match=(
        r"column 'v' is or holds an Arrow decimal256\(20, 3\), which DuckDB does not read\. "
        r"Cast it to pa.decimal128\(20, 3\)"
    )):
        run_merge(narrow, root, "id", connection=con, durable=False)
    assert not root.exists()


NANOS = ["2020-01-01T00:00:00.123456789", "1969-12-31T23:59:59.999999999"]


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize(
    "column, shown",
    [
        (pa.array(np.array(NANOS, "datetime64[ns]"), pa.timestamp("ns")),
         "2020-01-01 00:00:00.123456789"),
        (pa.array(np.array(NANOS[1:], "datetime64[ns]"), pa.timestamp("ns", tz="UTC")),
         "1969-12-31 23:59:59.999999999"),
        (pa.array([{"t": 1577836800123456000}, {"t": 5}], pa.struct([("t", pa.timestamp("ns"))])),
         "1970-01-01 00:00:00.000000005"),
        (pa.array([[1577836800123456000, 7], None], pa.list_(pa.timestamp("ns"))),
         "1970-01-01 00:00:00.000000007"),
    ],
    ids=["column", "with a time zone", "in a struct", "in a list"],
)
def test_int96_timestamps_with_nanoseconds_are_refused(tmp_path, column, shown, dry_run):
    """INT96 (Impala's, Hive's, pyarrow's use_deprecated_int96_timestamps) with nanoseconds:
    DuckDB reads INT96 to the microsecond, and a merge that rewrote the file cut every row's
    nanoseconds, the type became timestamp[us], with success (red team helper-82). Refused,
    naming the file, the column and a value; on a dry run too."""
    root = tmp_path / "ds"
    root.mkdir()
    table = pa.table({"id": pa.array(range(1, len(column) + 1), pa.int64()),
                      "w": pa.array([0] * len(column), pa.int64()), "v": column})
    pq.write_table(table, root / "impala.parquet", use_deprecated_int96_timestamps=True)
    before = fingerprint(root)
    source = pa.table({"id": pa.array([1], pa.int64()), "w": pa.array([9], pa.int64())})
    with pytest.raises(ParquetMergeError) as raised:
        run_merge(source, root, "id", connection=duckdb.connect(), durable=False,
                  dry_run=dry_run)
    assert (
        "the dataset's file impala.parquet stores column 'v' with INT96 timestamps (the "
        "deprecated Parquet timestamp of Impala, Hive and older Spark), one of which has "
        f"nanoseconds ({shown}): DuckDB reads INT96 to the microsecond"
    ) in str(raised.value)
    assert str(raised.value).endswith("The dataset was not changed.")
    assert fingerprint(root) == before
    pq.write_table(table, tmp_path / "source.parquet", use_deprecated_int96_timestamps=True)
    with pytest.raises(ParquetMergeError, match="the source file .*source.parquet stores column "
                       "'v' with INT96 timestamps"):
        run_merge(str(tmp_path / "source.parquet"), tmp_path / "other", "id",
                  connection=duckdb.connect(), durable=False)


def test_int96_timestamps_of_whole_microseconds_are_merged_exactly(tmp_path):
    """What Spark writes (INT96, microseconds), years 1 and 9999 included (out of the
    nanosecond range, where a nanosecond read wraps around), is merged, and the rows the merge
    did not touch read back the same."""
    root = tmp_path / "ds"
    root.mkdir()
    values = [datetime(1, 1, 1, 0, 0, 0, 1), datetime(9999, 12, 31, 23, 59, 59, 999999),
              datetime(2020, 1, 1, 0, 0, 0, 123456), None]
    table = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "w": pa.array([0] * 4, pa.int64()),
                      "v": pa.array(values, pa.timestamp("us"))})
    pq.write_table(table, root / "spark.parquet", use_deprecated_int96_timestamps=True)
    source = pa.table({"id": pa.array([3], pa.int64()), "w": pa.array([9], pa.int64())})
    stats = run_merge(source, root, "id", connection=duckdb.connect(), durable=False).stats
    assert (stats["updated"], stats["total"]) == (1, 4)
    after = pa.concat_tables(pq.read_table(f) for f in sorted(root.glob("*.parquet")))
    rows = zip(after["id"].to_pylist(), after["v"].to_pylist(), strict=True)
    assert sorted(rows, key=repr) == sorted(zip([1, 2, 3, 4], values, strict=True), key=repr)


class _Frame:
    """A user's subclass of pandas.DataFrame (made when a test asks for it)."""

    @staticmethod
    def of(data):
        import pandas as pd

        class UserFrame(pd.DataFrame):
            pass

        return UserFrame(data)


@pytest.mark.parametrize(
    "values, shown",
    [
        ([Decimal("12345678901234567890123456789"), Decimal("1E-13")], "1E-13"),
        ([Decimal("1" * 45), Decimal("2")], "1" * 45),
        ([Decimal("0.1"), 0.5], "0.1"),
        ([Decimal("1.5")] * 2999 + [Decimal("0.001")], "0.001"),
        ([[Decimal("1.5")]] * 2999 + [[Decimal("0.001")]], "0.001"),
        ([{"a": Decimal("12345678901234567890123456789")}, {"a": Decimal("1E-13")}], "1E-13"),
        ([[Decimal("1.5")]] * 2999 + [[Decimal("7.5"), Decimal("0.001")]], "0.001"),
        ([Decimal("12345678901234567890123456789"), 1e-13], "12345678901234567890123456789"),
    ],
    ids=["wider together than 38 digits", "one value of 45 digits", "with a float",
         "a row DuckDB's sample missed", "in lists", "in dicts", "shown: the value rounded",
         "beside a float: read as DOUBLE"],
)
@pytest.mark.parametrize("frame", ["pandas", "a subclass"])
def test_pandas_decimals_that_duckdb_reads_rounded_are_refused(tmp_path, values, shown, frame):
    """A pandas column of Python Decimal objects: DuckDB picks one type for them from a sample
    of the rows, and the merge wrote 1E-13 as 0 (DECIMAL(38,9)), 45 digits as a DOUBLE, the
    3000th row's 0.001 as 0.0 (DECIMAL(2,1) from the sample), the same inside lists and dicts,
    with success; a subclass of DataFrame was not looked at (red teams helper-82, helper-83)."""
    import pandas as pd

    data = {"id": range(len(values)), "v": pd.Series(values, dtype=object)}
    source = pd.DataFrame(data) if frame == "pandas" else _Frame.of(data)
    with pytest.raises(ParquetMergeError, match=(
        r"the source's column 'v' holds Python Decimal values that DuckDB does not read "
        rf"exactly \(it picks one type for the column's objects, from a sample of its rows\): "
        rf"{re.escape(shown)} would be merged as another value\..* Nothing was changed\.$"
    )):
        run_merge(source, tmp_path / "ds", "id", connection=duckdb.connect(), durable=False)
    assert not (tmp_path / "ds").exists()


def test_pandas_decimals_duckdb_reads_exactly_are_merged(tmp_path):
    """Decimals below 1 (DuckDB's DECIMAL(2,2)), trailing zeros, NaN and None, Decimals beside
    text (read as VARCHAR), in lists: merged, every value as it was (red team helper-83: a
    check by type refused 0.25 and -0.75)."""
    import pandas as pd

    frame = pd.DataFrame({
        "id": [1, 2, 3, 4],
        # what DuckDB reads as NULL, and numpy's numbers, beside Decimals (red team helper-84:
        # a raw StopIteration)
        "missing": pd.Series([Decimal("1.5"), pd.NA, pd.NaT, None], dtype=object),
        "numpy": pd.Series([Decimal("1.5"), np.int64(2), np.float32(2.5), None], dtype=object),
        "below_one": pd.Series([Decimal("-0.75"), Decimal("0.25"), None, Decimal("0.5")],
                               dtype=object),
        "zeros": pd.Series([Decimal("1.50"), Decimal("1.0000000001"), None, Decimal("2")],
                           dtype=object),
        # NaN: DuckDB reads the column as FLOAT, which holds 2.5 exactly (and 1.0000000001 not)
        "nan": pd.Series([Decimal("NaN"), Decimal("2.5"), None, Decimal("-4")], dtype=object),
        "text": pd.Series([Decimal("0.1"), "x", "0.10", None], dtype=object),
        "lists": pd.Series([[Decimal("0.001")], [], None, [Decimal("2")]], dtype=object),
    })
    run_merge(frame, tmp_path / "ds", "id", connection=duckdb.connect(), durable=False)
    rows = {r[0]: r[3:] for r in dataset(tmp_path / "ds")[1]}
    assert rows[1][0] == Decimal("-0.75") and rows[2][0] == Decimal("0.25")
    assert rows[2][1] == Decimal("1.0000000001") and rows[1][1] == Decimal("1.5")
    assert rows[2][2] == 2.5 and rows[4][2] == -4
    assert [rows[i][3] for i in (1, 2, 3)] == ["0.1", "x", "0.10"]
    assert rows[1][4] == [Decimal("0.001")]


def test_int96_files_with_two_columns_of_one_name_are_refused_for_their_names(tmp_path):
    """pyarrow reads no file with two columns of one name: the INT96 check let its raw
    ArrowInvalid through, before the refusal of the names (red team helper-83)."""
    root = tmp_path / "ds"
    root.mkdir()
    stamps = pa.array([1577836800123456000], pa.timestamp("ns"))
    pq.write_table(pa.Table.from_arrays([pa.array([1], pa.int64()), stamps, stamps],
                                        names=["id", "t", "t"]),
                   root / "f.parquet", use_deprecated_int96_timestamps=True)
    before = fingerprint(root)
    with pytest.raises(ParquetMergeError, match="the dataset's file f.parquet has columns 't' "
                       "and 't'"):
        run_merge(pa.table({"id": pa.array([1], pa.int64())}), root, "id",
                  connection=duckdb.connect(), durable=False)
    assert fingerprint(root) == before


def test_other_python_sources_of_decimal_objects_are_checked(tmp_path):
    """A dict of numpy object arrays, which DuckDB reads as a table as it reads pandas, and a
    pandas ArrowDtype decimal256 column (DuckDB's raw error named no column; red team
    helper-84)."""
    import pandas as pd

    arrays = {"id": np.array([0, 1]),
              "v": np.array([Decimal("12345678901234567890123456789"), Decimal("1E-13")],
                            dtype=object)}
    with pytest.raises(ParquetMergeError, match="the source's column 'v' holds Python Decimal "
                       "values that DuckDB does not read exactly .*: 1E-13 would be merged"):
        run_merge(arrays, tmp_path / "ds", "id", connection=duckdb.connect(), durable=False)
    frame = pd.DataFrame({"id": [0], "v": pd.Series([Decimal("1.5")],
                                                   dtype=pd.ArrowDtype(pa.decimal256(40, 2)))})
    with pytest.raises(ParquetMergeError, match=r"the source's column 'v' is an Arrow "
                       r"decimal256\(40, 2\), which DuckDB does not read"):
        run_merge(frame, tmp_path / "ds", "id", connection=duckdb.connect(), durable=False)
    assert not (tmp_path / "ds").exists()
