"""merge_history_table of a dataset merge: checked before anything is written, created on first
use by a cursor of its own (dbt_merge.duckdb.history, one thread at a time), and its row written
in a transaction that commits with the publish (the Python API) or in the dbt model's
transaction, which commits after the publish. A history table the row cannot go to is refused
before the dataset is touched, naming it and the fix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dbt_merge.duckdb.history import create_table


def check(
    query: Callable[[str, list], list[tuple]],
    relation: Any,
    name: str,
    columns: list[str],
    fail: Callable[[str], None],
) -> bool:
    """Refuse (fail) a history table the row cannot be appended to: a view, a table lacking a
    history column or holding a column the row leaves NULL that cannot be NULL, a missing
    schema, a read-only database. `relation` has .database, .schema, .identifier; `columns`
    are the history row's. Returns whether the table exists."""
    where = [relation.database, relation.schema, relation.identifier]
    said = f"merge_history_table '{name}'"
    readonly = query(
        "select readonly from duckdb_databases() where lower(database_name) = lower(?)",
        where[:1],
    )
    if readonly and readonly[0][0]:
        fail(
            f"{said} is in the database '{relation.database}', which is read-only: the history "
            "row could not be written. Attach it read-write, or leave merge_history_table out."
        )
    schemas = query(
        "select 1 from duckdb_schemas() where lower(database_name) = lower(?)"
        " and lower(schema_name) = lower(?)",
        where[:2],
    )
    if not schemas:
        fail(
            f"{said}: the schema {_quote(relation.database)}.{_quote(relation.schema)} does not "
            f"exist. Create it first (create schema {_quote(relation.schema)}), or name the "
            "history table in a schema that exists."
        )
    match = (
        " where lower(database_name) = lower(?) and lower(schema_name) = lower(?)"
        " and lower({name}) = lower(?)"
    )
    views = query("select 1 from duckdb_views()" + match.format(name="view_name"), where)
    if views:
        fail(
            f"{said} names a view ({relation}), not a table: the merge appends one row per merge "
            "to a table, created on first use. Name another table, or drop the view."
        )
    found = query(
        "select column_name, is_nullable, column_default is not null from duckdb_columns()"
        + match.format(name="table_name"),
        where,
    )
    if not found:
        return False
    have = {c.lower() for c, _, _ in found}
    missing = [c for c in columns if c.lower() not in have]
    if missing:
        fail(
            f"{said} ({relation}) is not a merge history table: it lacks the column(s) "
            f"{', '.join(missing)} (a history table has: {', '.join(columns)}; it holds: "
            f"{', '.join(c for c, _, _ in found)}). Name another table (created on first use), "
            "or drop or rename this one."
        )
    wanted = {c.lower() for c in columns}
    required = [
        c for c, nullable, default in found if not (nullable or default or c.lower() in wanted)
    ]
    if required:
        fail(
            f"{said} ({relation}) has column(s) that cannot be NULL and that the history row "
            f"does not fill: {', '.join(required)}. Give them a default or allow NULL, or name "
            "another table."
        )
    return True


def ensure_table(connection: Any, create_sql: str) -> None:
    """Create the history table if missing, committed at once, on a cursor of its own: two
    open transactions that both create it would fail with `Catalog write-write conflict`."""
    cursor = connection.cursor()
    try:
        create_table(cursor, create_sql)
    finally:
        cursor.close()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
