"""Create a source's DuckDB table from an Arrow stream, the way dbt-duckdb loads plugin sources,
with two fixes (dbt-duckdb 1.11 `LocalEnvironment.load_source`):

- every name is quoted: dbt-duckdb pastes `schema` and `schema.identifier` into its CREATE
  statements as they are, so a name with a space, dash, quote or dot is a syntax error (and a
  mixed-case one is folded);
- catalog changes are serialized: with `--threads` > 1 each thread loads its models' sources at
  once, and two threads creating the same new schema (or replacing the same table) in
  concurrent transactions fail with `Catalog write-write conflict`.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from dbt_merge.duckdb.connection import quote

_SCHEMA_LOCK = threading.Lock()
_TABLE_LOCKS: dict[str, threading.Lock] = {}
MATERIALIZATIONS = ("table", "view")


def qualified(*parts: str | None) -> str:
    """`"a"."b"."c"` from the parts that are set."""
    return ".".join(quote(p) for p in parts if p)


def table_exists(cursor: Any, database: str | None, schema: str, table: str) -> bool:
    sql = (
        "SELECT count(*) FROM system.information_schema.tables"
        " WHERE table_schema = ? AND table_name = ?"
    )
    params = [schema, table]
    if database:
        sql += " AND table_catalog = ?"
        params.append(database)
    return bool(cursor.execute(sql, params).fetchall()[0][0])


def create_schema(cursor: Any, database: str | None, schema: str) -> None:
    """CREATE SCHEMA IF NOT EXISTS, one thread at a time, committed before the next looks."""
    with _SCHEMA_LOCK:
        cursor.execute(f"CREATE SCHEMA IF NOT EXISTS {qualified(database, schema)}")


def table_lock(name: str) -> threading.Lock:
    """The lock of one table: its loads (replacements) run one after the other."""
    with _SCHEMA_LOCK:
        return _TABLE_LOCKS.setdefault(name, threading.Lock())


def create_from_stream(
    cursor: Any,
    name: str,
    data: Any,
    materialization: str = "table",
    registered: dict[str, Any] | None = None,
) -> None:
    """CREATE OR REPLACE `name` (already qualified) AS the rows of `data` (an Arrow stream or
    anything DuckDB can register). `data` is registered under a name of our own; a table drops
    it afterwards, a view keeps it in `registered` (dbt-duckdb registers those on every cursor).
    """
    if materialization not in MATERIALIZATIONS:
        raise ValueError(
            f"source materialization '{materialization}' is not one of: "
            + ", ".join(MATERIALIZATIONS)
        )
    alias = f"__dbt_merge_source_{uuid.uuid4().hex}"
    cursor.register(alias, data)
    try:
        cursor.execute(f"CREATE OR REPLACE {materialization} {name} AS SELECT * FROM {alias}")
    finally:
        if materialization == "view" and registered is not None:
            registered[alias] = data
        else:
            cursor.unregister(alias)
