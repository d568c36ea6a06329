"""The pure planning of where a merge's files go and which folder it swaps (no I/O)."""

from __future__ import annotations

import pytest
from dbt_merge.parquet import ParquetMergeError
from dbt_merge.parquet.layout import common_dir, partition_columns, partition_values, plan_swap


def test_partition_columns():
    assert partition_columns([], "/d") == []
    assert partition_columns(["a.parquet", "b.parquet"], "/d") == []
    files = [
        "p=1/q=a/x.parquet",
        "p=2/q=%2F/y.parquet",
        "p=/q=__HIVE_DEFAULT_PARTITION__/z.parquet",
    ]
    assert partition_columns(files, "/d") == ["p", "q"]


@pytest.mark.parametrize(
    "files",
    [
        ["a.parquet", "p=1/b.parquet"],  # flat and partitioned
        ["p=1/a.parquet", "q=1/b.parquet"],  # two partition columns
        ["p=1/a.parquet", "p=1/q=2/b.parquet"],  # two depths
        ["data/a.parquet"],  # a folder that is not column=value
    ],
)
def test_partition_columns_refuses_mixed_layouts(files):
    with pytest.raises(ParquetMergeError, match="not laid out as one dataset"):
        partition_columns(files, "/d")


def test_partition_values_are_decoded_as_duckdb_reads_them():
    path = "p=a%2Fb/q=__HIVE_DEFAULT_PARTITION__/r=/s=x%zz+y/f.parquet"
    assert partition_values(path, ["p", "q", "r", "s"]) == ("a/b", None, "", "x%zz+y")
    assert partition_values("f.parquet", []) == ()


def test_common_dir():
    assert common_dir(["a.parquet"]) == ""
    assert common_dir(["p=1/a.parquet", "p=1/b.parquet"]) == "p=1"
    assert common_dir(["p=1/q=1/a.parquet", "p=1/q=2/b.parquet"]) == "p=1"
    assert common_dir(["p=1/a.parquet", "p=2/b.parquet"]) == ""
    # a common prefix of names is not a common folder
    assert common_dir(["p=1/a.parquet", "p=10/b.parquet"]) == ""


def test_plan_swap():
    existing = {"", "p=1", "p=2"}

    def exists(d: str) -> bool:
        return d in existing

    assert plan_swap([], [], exists).mode == "none"
    one = plan_swap(["p=1/old.parquet"], ["p=1/new.parquet"], exists)
    assert (one.mode, one.directory) == ("exchange", "p=1")
    two = plan_swap(["p=1/old.parquet"], ["p=2/new.parquet"], exists)
    assert (two.mode, two.directory) == ("exchange", "")
    # only new files in a new partition: create it
    new = plan_swap([], ["p=3/a.parquet", "p=3/b.parquet"], exists)
    assert (new.mode, new.directory) == ("create", "p=3")
    deep = plan_swap([], ["p=3/q=1/a.parquet", "p=3/q=2/b.parquet"], exists)
    assert (deep.mode, deep.directory) == ("create", "p=3")
    # a new dataset
    first = plan_swap([], ["a.parquet"], lambda d: False)
    assert (first.mode, first.directory) == ("create", "")


@pytest.mark.parametrize("path", ["/etc/x.parquet", "../x.parquet", "a/../../x", "a//b", "./a"])
def test_publish_refuses_a_path_outside_the_dataset(tmp_path, path):
    from dbt_merge.parquet.commit import publish, transaction
    from dbt_merge.parquet.layout import SwapPlan

    with transaction(tmp_path / "ds") as tx:
        with pytest.raises(ValueError, match="not a path inside the dataset"):
            publish(tx, SwapPlan("create", "", frozenset(), (path,)))
    assert not (tmp_path / "ds").exists()


def test_a_dataset_inside_another_names_the_folder(tmp_path):
    """A merge into a plain subfolder of a dataset (documented: its own dataset, read by its own
    folder), then into the outer one: refused naming a file of each layout and the plain folder,
    the same message every run (red team helper-72: "found: (root), None", in either order)."""
    import pyarrow as pa
    from dbt_merge import merge_parquet_dataset

    outer = tmp_path / "sales"
    merge_parquet_dataset(pa.table({"id": [1, 2], "v": ["a", "b"]}), outer, "id")
    merge_parquet_dataset(pa.table({"id": [10], "v": ["z"]}), outer / "2024", "id")
    said = set()
    for _ in range(3):
        with pytest.raises(ParquetMergeError) as refused:
            merge_parquet_dataset(pa.table({"id": [1], "v": ["A"]}), outer, "id")
        said.add(str(refused.value))
    (message,) = said
    assert "A plain folder inside the dataset's folder (2024) holding Parquet files" in message
    assert "2024/dbt_merge-" in message and "(root)" not in message


def test_mixed_layouts_name_one_file_of_each_in_order():
    with pytest.raises(ParquetMergeError) as refused:
        partition_columns(["p=1/b.parquet", "a.parquet", "data/c.parquet"], "/d")
    assert "(e.g. a.parquet, data/c.parquet, p=1/b.parquet)" in str(refused.value)
    assert "(data)" in str(refused.value)


def test_mixed_layouts_name_every_plain_folder_once():
    """Every plain folder, as the path up to it: b, c and x (not x and y), _temporary (not its
    `0`), p=1/data (red team helper-74: one folder a run, `x, y` for x/y)."""
    files = ["a.parquet", "b/1.parquet", "c/2.parquet", "x/y/3.parquet",
             "_temporary/0/p=1/4.parquet", "p=1/data/5.parquet"]
    with pytest.raises(ParquetMergeError) as refused:
        partition_columns(iter(files), "/d")
    assert "(_temporary; b; c; p=1/data; x)" in str(refused.value), str(refused.value)
