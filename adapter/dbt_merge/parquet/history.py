"""merge_history_table of a dataset merge: checked before anything is written (by
dbt_merge.duckdb.history.check, as on every DuckDB door), created on first use by a cursor of its
own (dbt_merge.duckdb.history, one thread at a time), and its row written in a transaction that
commits with the publish (the Python API) or in the dbt model's transaction, which commits after
the publish."""

from __future__ import annotations

from typing import Any

from dbt_merge.duckdb.history import create_table


def ensure_table(connection: Any, create_sql: str) -> None:
    """Create the history table if missing, committed at once, on a cursor of its own: two
    open transactions that both create it would fail with `Catalog write-write conflict`."""
    cursor = connection.cursor()
    try:
        create_table(cursor, create_sql)
    finally:
        cursor.close()
