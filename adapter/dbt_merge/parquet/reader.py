"""Reading a dataset as one merge left it: dataset_files (its files, with no merge of the
package publishing into it meanwhile) and read_dataset (its rows)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import duckdb

from dbt_merge.parquet import commit, layout, paths
from dbt_merge.parquet import sql as q
from dbt_merge.parquet.errors import ParquetMergeError


@contextlib.contextmanager
def dataset_files(target_path: str | os.PathLike) -> Iterator[list[str]]:
    """The dataset's Parquet files (absolute paths, sorted), with no merge of the package
    publishing into it until the block ends: read them inside the block, and the read is the
    dataset as one merge left it, never part of one state and part of another. A glob of
    `target_path/**/*.parquet` taken while a merge publishes may not be (DuckDB skips a listed
    file that is gone when it looks at it; see docs/parquet-datasets.md, Readers). A merge
    waits to publish until such blocks end. `target_path` is resolved as the merge resolves it
    (`~`, symlinks, `..`). A file whose path has a glob character or a backslash (another
    tool's `a[1].parquet`) is refused: DuckDB expands every path of a list it reads, so a read
    of the list would read another file in its place."""
    root = Path(os.path.realpath(os.path.expanduser(os.fspath(target_path))))
    with commit.dataset_files(root) as files:
        for f in files:
            odd = sorted({ch for ch in f if ch in paths.GLOB_CHARACTERS + "\\"})
            if odd:
                raise ParquetMergeError(
                    f"dbt_merge: dataset '{target_path}': the file '{f}' has {' '.join(odd)} "
                    "in its path, which DuckDB reads as a glob (or a backslash as an escape) in "
                    "every path of a list it reads: a read of the dataset's files would read "
                    "another file in its place, or none. Rename it without * ? [ { \\. "
                    "Nothing was read."
                )
        yield files


def read_dataset(
    target_path: str | os.PathLike,
    *,
    connection: duckdb.DuckDBPyConnection | None = None,
    hive_types: dict[str, str] | None = None,
):
    """The dataset's rows as a PyArrow table, read inside dataset_files (one state of the
    dataset, whatever merges publish meanwhile), union_by_name over its files. Partition
    columns come from the folders below `target_path` only (a `k=v` folder above it is no
    column), typed by `hive_types` ({column: DuckDB type}; VARCHAR otherwise: folder names
    carry no type). `connection`: the DuckDB connection to read with (default: a private
    one). A folder without Parquet files is refused."""
    con = connection or duckdb.connect()
    try:
        with dataset_files(target_path) as files:
            if not files:
                raise ParquetMergeError(
                    f"dbt_merge: dataset '{target_path}': it holds no Parquet file to read."
                )
            root = os.path.realpath(os.path.expanduser(os.fspath(target_path)))
            rels = [os.path.relpath(f, root).replace(os.sep, "/") for f in files]
            partitions = layout.partition_columns(rels, root)
            hive = None
            if partitions:
                wanted = {k.lower(): v for k, v in (hive_types or {}).items()}
                types = {p: wanted.get(p.lower(), "VARCHAR") for p in partitions}
                values = {
                    f: layout.partition_values(r, partitions)
                    for f, r in zip(files, rels, strict=True)
                }
                hive = q.Hive(types, values)
            return con.sql(f"select * from {q.read_files(files, hive)}").to_arrow_table()
    finally:
        if connection is None:
            con.close()
