"""What the merge flow needs from dbt-duckdb, on the caller's own DuckDB connection, as a guest.

- Relation / Column: the few attributes the macros read of dbt-duckdb's relations and columns
  (rendered `"database"."schema"."identifier"`, quoted, as dbt-duckdb renders them; a work
  relation has its identifier only, as dbt-duckdb's make_temp_relation gives it).
- DuckDBRunner: runs the flow's statements and queries on the connection. It leaves nothing to
  clean up: the flow drops its temporary work relations when it succeeds, and the rollback of
  the call's transaction drops those it created when it fails.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dbt_merge import render


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class Relation:
    """A table or view as the macros see a dbt-duckdb relation."""

    database: str | None
    schema: str | None
    identifier: str
    type: str = "table"

    @property
    def is_view(self) -> bool:
        return self.type == "view"

    @property
    def is_table(self) -> bool:
        return self.type == "table"

    def incorporate(self, path: dict[str, Any] | None = None, type: str | None = None) -> Relation:
        changes: dict[str, Any] = dict(path or {})
        if type is not None:
            changes["type"] = type
        return replace(self, **changes)

    def render(self) -> str:
        return ".".join(quote(p) for p in (self.database, self.schema, self.identifier) if p)

    def __str__(self) -> str:
        return self.render()

    @classmethod
    def create(
        cls,
        database: str | None = None,
        schema: str | None = None,
        identifier: str = "",
        type: str = "table",
    ) -> Relation:
        """api.Relation.create, as the macros call it."""
        return cls(database, schema, identifier, type)


@dataclass(frozen=True)
class Column(render.Column):
    """A column as dbt-duckdb's get_columns_in_relation gives it (the type as DuckDB names it)."""

    @property
    def quoted(self) -> str:
        return quote(self.name)


class DuckDBRunner:
    """The flow's statements and dbt-duckdb's catalog look-ups, on one connection."""

    def __init__(self, con):
        self.con = con

    def query(self, sql: str) -> tuple[list[str], list[tuple]]:
        cursor = self.con.execute(sql)
        columns = [d[0] for d in cursor.description or []]
        return columns, cursor.fetchall() if columns else []

    def statement(self, sql: str) -> None:
        self.con.execute(sql)

    def load_relation(self, relation: Relation) -> Relation | None:
        """load_cached_relation: the relation as the catalog names it (table or view), or None."""
        rows = self.con.execute(
            "select table_catalog, table_schema, table_name, table_type"
            " from information_schema.tables where lower(table_catalog) = lower(?)"
            " and lower(table_schema) = lower(?) and lower(table_name) = lower(?)",
            [relation.database, relation.schema, relation.identifier],
        ).fetchall()
        if not rows:
            return None
        database, schema, identifier, kind = rows[0]
        return Relation(database, schema, identifier, "view" if kind == "VIEW" else "table")

    def get_columns(self, relation: Relation) -> list[Column]:
        """adapter.get_columns_in_relation: every column in order, with DuckDB's type name."""
        rows = self.con.execute(f"describe select * from {relation}").fetchall()
        return [Column(row[0], row[1]) for row in rows]

    def drop_relation(self, relation: Relation) -> None:
        self.statement(f"drop {'view' if relation.is_view else 'table'} if exists {relation}")
