"""merge_history_table of a dataset merge: checked before anything is written (by
dbt_merge.duckdb.history.check, as on every DuckDB door), created on first use by a cursor of its
own (dbt_merge.duckdb.history, one thread at a time), and its row written in a transaction that
commits with the publish (the Python API) or in the dbt model's transaction, which commits after
the publish."""

from __future__ import annotations

from typing import Any

import duckdb

from dbt_merge.duckdb import history as duckdb_history
from dbt_merge.duckdb.history import create_table
from dbt_merge.parquet.errors import ParquetMergeError
from dbt_merge.parquet.sql import Column
from dbt_merge.render import MacroContext


def ensure_table(connection: Any, create_sql: str) -> None:
    """Create the history table if missing, committed at once, on a cursor of its own: two
    open transactions that both create it would fail with `Catalog write-write conflict`."""
    cursor = connection.cursor()
    try:
        create_table(cursor, create_sql)
    finally:
        cursor.close()


def _query(con: Any):
    """run_query for the macros: (column names, rows) of one statement on `con`."""

    def query(sql: str) -> tuple[list[str], list[tuple]]:
        cursor = con.execute(sql)
        if cursor.description is None:
            return [], []
        return [d[0] for d in cursor.description], cursor.fetchall()

    return query


class Recorder:
    """merge_history_table: checked when the merge starts (before anything is written),
    created on first use by a cursor of its own, and its row written on another cursor of its
    own, in a transaction begun after the table exists and committed right after the publish
    (a dbt model's transaction may have begun before the table was created, and would not see
    it). So the row exists exactly when the dataset was published."""

    def __init__(self, con, config, context, cfg, fail):
        self.con, self.config, self.context, self.cfg = con, config, context, cfg
        self.name = cfg["history_table"]
        macros = self._macros(con, fail)
        self.relation = macros.get("merge_history_relation")(self.name, context["this"])
        self.create_sql = macros.get("create_merge_history_sql")(self.relation)
        columns = [c for c, _ in macros.get("merge_history_columns")()]

        def refuse(message: str) -> None:
            fail(message + " The target was not changed.")

        self.fail, self.refuse = fail, refuse
        duckdb_history.check(
            lambda sql, params: con.execute(sql, params).fetchall(),
            self.relation,
            self.name,
            columns,
            refuse,
        )

    def _macros(self, con, fail) -> MacroContext:
        def columns(relation) -> list[Column]:
            # record_merge_history reads the history table's columns (`versions` or not)
            rows = con.execute(f"describe select * from {relation}").fetchall()
            return [Column(row[0], row[1]) for row in rows]

        return MacroContext(
            self.config,
            _query(con),
            fail,
            context=self.context,
            error=ParquetMergeError,
            adapter_methods={"get_columns_in_relation": columns},
        )

    def ensure(self) -> None:
        ensure_table(self.con, self.create_sql)

    def publishing(self, publish, stats, started_at, prefix: str):
        """The publish, with the history row: written in a transaction on a cursor of its own,
        the dataset published, the transaction committed. A failure before the commit rolls
        the row back and leaves the dataset unpublished."""

        def run() -> None:
            cursor = self.con.cursor()
            try:
                cursor.begin()
                try:
                    try:
                        self._macros(cursor, self.fail).record_merge_history(
                            self.name, self.context["this"], self.cfg["strategy"], stats, started_at
                        )
                    except duckdb.Error as e:
                        self.refuse(
                            f"merge_history_table '{self.name}': the history row could not be "
                            f"written to {self.relation} ({type(e).__name__}: {e}). Fix that "
                            "table or name another (leave merge_history_table out to merge "
                            "without a history)."
                        )
                    publish()
                except BaseException:
                    cursor.rollback()
                    raise
                try:
                    cursor.commit()
                except duckdb.Error as e:
                    raise ParquetMergeError(
                        f"{prefix}the dataset was merged and published, but its history row "
                        f"could not be committed to {self.relation} ({type(e).__name__}: {e});"
                        " the merge's statistics were not recorded."
                    ) from e
            finally:
                cursor.close()

        return run
