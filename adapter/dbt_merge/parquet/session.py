"""The DuckDB side of one dataset merge: its connection and the temporary objects it creates
(Session), the file options checked (FileOptions), and what the merge did (MergeReport, and the
Pending publish of a deferred one). Shared by the door (api.py), the writer (writer.py) and the
dbt job (dbt_job.py)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from dbt_merge.parquet import sql as q
from dbt_merge.parquet.sql import Column


@dataclass
class MergeReport:
    """What a merge did: the five statistics, plus the files it replaced and wrote."""

    stats: dict[str, int]
    root: str = ""
    files_removed: list[str] = field(default_factory=list)
    files_added: list[str] = field(default_factory=list)
    rows_written: int = 0
    files_scanned: int = 0  # files read in full (the candidates that may hold a source key)
    dataset_files: int = 0
    columns: list[str] = field(default_factory=list)  # the dataset's columns afterwards
    partition_columns: list[str] = field(default_factory=list)
    hive_types: dict[str, str] = field(default_factory=dict)
    pending: Pending | None = None  # defer_publish=True: publish it to make it live


@dataclass
class Pending:
    """A merge whose files are written but not yet live (merge_with_report(defer_publish=True)). It
    holds the dataset's lock until publish() or abort(); each releases it and deletes the
    work files. `files` is the dataset as it will be: (absolute path, path relative to the
    dataset) of each file, the new ones still in the work folder."""

    files: list[tuple[str, str]]
    _publish: Any
    _close: contextlib.ExitStack

    def publish(self) -> None:
        try:
            self._publish()
        finally:
            self._close.close()

    def abort(self) -> None:
        self._close.close()


@dataclass
class FileOptions:
    compression: str
    rows_per_file: int
    row_group_size: int
    partition_by: list[str] | None


def check_file_options(
    compression: str,
    rows_per_file: int,
    row_group_size: int,
    partition_by: str | Sequence[str] | None,
    fail,
) -> FileOptions:
    codec = str(compression).lower()
    if codec not in q.COMPRESSIONS:
        fail(f"compression '{compression}' is not one of: {', '.join(q.COMPRESSIONS)}.")
    for name, value in (("rows_per_file", rows_per_file), ("row_group_size", row_group_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            fail(f"{name} must be a positive integer, not {value!r}.")
    columns = None
    if partition_by is not None:
        columns = [partition_by] if isinstance(partition_by, str) else list(partition_by)
        columns = [str(c).strip() for c in columns if str(c).strip()]
        for column in columns:
            if not re.fullmatch(r"[A-Za-z0-9_-]+", column):
                # DuckDB URL-encodes such a name in the hive folders (`Part%20Col=x`) and reads
                # it back encoded: the next merge, read_dataset and dbt's view disagree with it
                fail(
                    f"partition column '{column}' has characters hive folder names cannot hold "
                    "as they are (DuckDB writes and reads them URL-encoded): partition columns "
                    "take only the letters A-Z and a-z, digits, '_' and '-'. Rename the column "
                    f"in the source (e.g. '{re.sub(r'[^A-Za-z0-9_-]+', '_', column)}'), or "
                    "partition by another."
                )
    return FileOptions(codec, rows_per_file, row_group_size, columns)


class Session:
    """The DuckDB connection of one merge and the temporary objects it creates."""

    def __init__(self, con: duckdb.DuckDBPyConnection, tx_id: str, private: bool = False):
        self.con = con
        # the door made the connection (no caller's objects in it, closed after the merge)
        self.private = private
        self.prefix = f"dbt_merge_{tx_id}_"
        self.created: list[tuple[str, str]] = []

    def query(self, sql: str) -> tuple[list[str], list[tuple]]:
        cursor = self.con.execute(sql)
        if cursor.description is None:
            return [], []
        return [d[0] for d in cursor.description], cursor.fetchall()

    def one(self, sql: str) -> tuple:
        return self.query(sql)[1][0]

    def temp(self, role: str, select: str, kind: str = "table") -> str:
        name = q.quote(self.prefix + role)
        self.con.execute(f"create temporary {kind} {name} as {select}")
        self.created.append((kind, name))
        return name

    def register(self, role: str, obj: Any) -> str:
        name = self.prefix + role
        self.con.register(name, obj)
        self.created.append(("registered", name))
        return q.quote(name)

    def describe(self, relation: str) -> list[Column]:
        rows = self.query(f"describe select * from {relation}")[1]
        return [Column(r[0], r[1]) for r in rows]

    def drop(self, name: str) -> None:
        for kind, created in self.created:
            if created == name:
                self.con.execute(f"drop {kind} if exists {name}")
                self.created.remove((kind, created))
                return

    def drop_all(self) -> None:
        if self.private:
            self.created.clear()
            return  # closed next, with everything it holds
        for kind, name in reversed(self.created):
            try:
                if kind == "registered":
                    self.con.unregister(name)
                else:
                    self.con.execute(f"drop {kind} if exists {name}")
            except duckdb.Error:
                pass
        self.created.clear()
        # the flow's work relations (named with this prefix by make_temp_relation) that a
        # refused merge left: run_merge drops them only when it gets to its end
        try:
            left = self.con.execute(
                "select 'table', table_name from duckdb_tables() where temporary"
                " and starts_with(table_name, $1) union all select 'view', view_name"
                " from duckdb_views() where temporary and starts_with(view_name, $1)",
                [self.prefix],
            ).fetchall()
            for kind, name in left:
                self.con.execute(f"drop {kind} if exists temp.main.{q.quote(name)}")
        except duckdb.Error:
            pass
