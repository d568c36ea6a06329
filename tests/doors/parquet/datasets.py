"""Helpers for the Parquet dataset tests: typed Arrow tables, datasets on disk, fingerprints."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

ARROW_TYPES = {
    "int": pa.int64(),
    "float": pa.float64(),
    "str": pa.string(),
    "date": pa.date32(),
    "ts": pa.timestamp("us"),
    "bool": pa.bool_(),
}


def arrow_table(columns: list[tuple[str, str]], rows: list[dict]) -> pa.Table:
    schema = pa.schema([(name, ARROW_TYPES[t]) for name, t in columns])
    return pa.table(
        {name: pa.array([r[name] for r in rows], type=ARROW_TYPES[t]) for name, t in columns},
        schema=schema,
    )


def write_dataset(
    root: Path,
    columns: list[tuple[str, str]],
    rows: list[dict],
    parts: int = 1,
    partition_by: list[str] | None = None,
) -> None:
    """A dataset as another tool would leave it: pyarrow files (flat, `parts` files, rows in
    the given order) or DuckDB's hive-partitioned COPY."""
    root.mkdir(parents=True)
    table = arrow_table(columns, rows)
    if partition_by:
        con = duckdb.connect()
        con.register("rows_to_write", table)
        cols = ", ".join('"' + c.replace('"', '""') + '"' for c in partition_by)
        con.execute(
            f"copy rows_to_write to '{root}' (format parquet, partition_by ({cols}),"
            " overwrite_or_ignore)"
        )
        con.close()
        if not rows:
            pq.write_table(table.drop_columns(partition_by), root / "empty.parquet")
        return
    n = max(1, min(parts, len(rows)))
    size = -(-len(rows) // n) if rows else 0
    for i in range(n):
        pq.write_table(table.slice(i * size, size), root / f"part-{i}.parquet")


def read_dataset(root: Path, hive_types: dict[str, str] | None = None) -> tuple[list, list[dict]]:
    """(column names, rows) of every `*.parquet` under root, as a reader sees them."""
    con = duckdb.connect()
    options = "union_by_name = true"
    if hive_types:
        types = ", ".join(f"'{c}': '{t}'" for c, t in hive_types.items())
        options += ", hive_partitioning = true, hive_types = {" + types + "}"
    else:
        options += ", hive_partitioning = false"
    pattern = str(root / "**" / "*.parquet").replace("'", "''")
    cur = con.execute(f"select * from read_parquet('{pattern}', {options})")
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    con.close()
    return names, rows


def fingerprint(root: Path) -> dict[str, tuple]:
    """Every file under root with its inode, size and mtime: equal means untouched."""
    found = {}
    if root.exists():
        for dirpath, _, files in os.walk(root):
            for name in files:
                path = Path(dirpath) / name
                st = path.stat()
                found[str(path.relative_to(root))] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return found
