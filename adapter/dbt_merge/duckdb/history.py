"""Create a DuckDB `merge_history_table` on first use, once, whatever dbt's --threads.

dbt-duckdb runs each model in its own transaction on one database. Two transactions that both
create the same table fail with `Catalog write-write conflict`, so the history table cannot be
created inside the merges that share it. The materialization (prepare_merge_history) creates it
before its own transaction begins, through a dbt-duckdb Python job: on a cursor of its own
(committed at once), one thread at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from dbt_merge.duckdb.connection import ascii_lower_sql

_LOCK = threading.Lock()


def create_table(cursor: Any, create_sql: str, alter_sql: str | None = None) -> None:
    """Run `create_sql` (CREATE TABLE IF NOT EXISTS), then `alter_sql` if given (the column a
    history merge adds to a table made before it had one), on `cursor`, a connection of its
    own, serialized with every other thread of this process."""
    with _LOCK:
        cursor.execute(create_sql)
        if alter_sql:
            cursor.execute(alter_sql)


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
        f"select readonly from duckdb_databases() where {ascii_lower_sql('database_name')}"
        f" = {ascii_lower_sql('?')}",
        where[:1],
    )
    if readonly and readonly[0][0]:
        fail(
            f"{said} is in the database '{relation.database}', which is read-only: the history "
            "row could not be written. Attach it read-write, or leave merge_history_table out."
        )
    schemas = query(
        f"select 1 from duckdb_schemas() where {ascii_lower_sql('database_name')}"
        f" = {ascii_lower_sql('?')} and {ascii_lower_sql('schema_name')} = {ascii_lower_sql('?')}",
        where[:2],
    )
    if not schemas:
        fail(
            f"{said}: the schema {_quote(relation.database)}.{_quote(relation.schema)} does not "
            f"exist. Create it first (create schema {_quote(relation.schema)}), or name the "
            "history table in a schema that exists."
        )
    match = (
        f" where {ascii_lower_sql('database_name')} = {ascii_lower_sql('?')}"
        f" and {ascii_lower_sql('schema_name')} = {ascii_lower_sql('?')}"
        f" and {ascii_lower_sql('{name}')} = {ascii_lower_sql('?')}"
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


def refuse_unusable(cursor: Any, relation: Any, name: str, columns: list[str], prefix: str,
                    error: type[Exception]) -> None:
    """check() on a cursor of its own, before the merge begins: a history table the row cannot
    go to (a view, a table lacking a history column, ...) fails with `error`, the message
    starting with `prefix` (the model or table the merge is for), before anything is written."""

    def fail(message: str) -> None:
        raise error(prefix + message + " The target was not changed.")

    check(lambda sql, params: cursor.execute(sql, params).fetchall(), relation, name, columns,
          fail)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
