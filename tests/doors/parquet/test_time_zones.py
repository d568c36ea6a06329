"""TIMESTAMP against TIMESTAMP WITH TIME ZONE in merge_parquet_dataset (issue 21, class 3).

A wall-clock timestamp matched or compared against an instant goes through the session time
zone (the process's TZ, or the connection's TimeZone setting): the same source and dataset gave
`1 updated` in one zone and `1 inserted` (a doubled row) in another. The merge refuses such a
key or value column, naming it and the cast that states the zone, and leaves the dataset as it
was; a source of the dataset's own type merges alike in every zone."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from dbt_merge import ParquetMergeError, merge_parquet_dataset

from .datasets import fingerprint, read_dataset

ZONES = ["UTC", "America/New_York", "Asia/Kolkata"]
T0 = dt.datetime(2024, 1, 1, 12, 0)
T1 = dt.datetime(2024, 6, 1, 8, 30)
NAIVE = pa.timestamp("us")
ZONED = pa.timestamp("us", tz="UTC")


def _table(key_type, value_type, keys, values, names) -> pa.Table:
    def stamp(t, typ):
        return t.replace(tzinfo=dt.timezone.utc) if typ.tz else t

    return pa.table({
        "k": pa.array([stamp(k, key_type) for k in keys], key_type),
        "at": pa.array([stamp(v, value_type) for v in values], value_type),
        "name": pa.array(names, pa.string()),
    })


def _connection(zone: str) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(f"set TimeZone = '{zone}'")
    return con


def _rows(root: Path) -> list[tuple]:
    return sorted(tuple(r.values()) for r in read_dataset(root)[1])


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize(
    "dataset_types, source_types, column, message",
    [
        ((ZONED, ZONED), (NAIVE, ZONED), "k",
         "key column 'k' is timestamp in the source but timestamp with time zone in the "
         "target"),
        ((NAIVE, NAIVE), (ZONED, NAIVE), "k",
         "key column 'k' is timestamp with time zone in the source but timestamp in the "
         "target"),
        ((NAIVE, ZONED), (NAIVE, NAIVE), "at",
         "column 'at' is timestamp in the source but timestamp with time zone in the target"),
        ((NAIVE, NAIVE), (NAIVE, ZONED), "at",
         "column 'at' is timestamp with time zone in the source but timestamp in the target"),
    ],
    ids=["key_naive_into_zoned", "key_zoned_into_naive", "value_naive_into_zoned",
         "value_zoned_into_naive"],
)
def test_mixed_time_zone_columns_are_refused(tmp_path, zone, dataset_types, source_types,
                                             column, message):
    root = tmp_path / "ds"
    first = _table(*dataset_types, [T0], [T0], ["a"])
    assert merge_parquet_dataset(first, root, "k")["inserted"] == 1
    before, rows = fingerprint(root), _rows(root)
    source = _table(*source_types, [T0, T1], [T1, T1], ["b", "c"])
    with pytest.raises(ParquetMergeError) as err:
        merge_parquet_dataset(source, root, "k", connection=_connection(zone))
    text = " ".join(str(err.value).split())
    assert message in text, text
    assert f'"{column}" at time zone \'UTC\'' in text and "The dataset was not changed." in text
    assert fingerprint(root) == before and _rows(root) == rows


@pytest.mark.parametrize("zone", ZONES)
def test_a_source_of_the_datasets_type_merges_alike_in_every_zone(tmp_path, zone):
    root = tmp_path / "ds"
    merge_parquet_dataset(_table(ZONED, ZONED, [T0], [T0], ["a"]), root, "k")
    source = _table(ZONED, ZONED, [T0, T1], [T0, T1], ["b", "c"])
    stats = merge_parquet_dataset(source, root, "k", connection=_connection(zone))
    assert stats == {"inserted": 1, "updated": 1, "deleted": 0, "unchanged": 0, "total": 2}
    utc = dt.timezone.utc
    got = [(k.astimezone(utc), at.astimezone(utc), name) for k, at, name in _rows(root)]
    assert got == [(T0.replace(tzinfo=utc), T0.replace(tzinfo=utc), "b"),
                   (T1.replace(tzinfo=utc), T1.replace(tzinfo=utc), "c")]
