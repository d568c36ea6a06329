"""What the merge flow needs from dbt-duckdb, on the caller's own DuckDB connection, as a guest.

- Relation / Column: the few attributes the macros read of dbt-duckdb's relations and columns
  (rendered `"database"."schema"."identifier"`, quoted, as dbt-duckdb renders them; a work
  relation has its identifier only, as dbt-duckdb's make_temp_relation gives it).
- DuckDBRunner: runs the flow's statements and queries on the connection, which the merge must
  have to itself (ConnectionInUse otherwise). It leaves nothing to clean up: the flow drops its
  temporary work relations when it succeeds, and the rollback of the call's transaction drops
  those it created when it fails.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

import duckdb

from dbt_merge import render

_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ASCII_LOWER = str.maketrans(_UPPER, _UPPER.lower())


def ascii_lower(name: str) -> str:
    """A name as DuckDB compares names: the letters A-Z folded, nothing else ("Ä" and "ä" are
    two names; Python's lower() folds them both)."""
    return name.translate(_ASCII_LOWER)


def ascii_lower_sql(expression: str) -> str:
    """ascii_lower in SQL, of a DuckDB expression."""
    return f"translate({expression}, '{_UPPER}', '{_UPPER.lower()}')"


def quote(name: str) -> str:
    """A DuckDB identifier in double quotes, a double quote inside doubled: the one quote of the
    DuckDB doors, the Parquet dataset door and the ClickHouse loader."""
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


class ConnectionInUse(Exception):
    """Another call used the merge's connection while the merge ran: DuckDB refused a call of the
    merge (the connection busy with another call, or holding another call's unfinished result),
    or a statement that was not the merge's ended or aborted its transaction. `why` says which."""

    def __init__(self, why: str, reason: str = "busy"):
        super().__init__(why)
        self.why = why
        self.reason = reason  # busy, unfinished (a result), open (a transaction before the merge's)


#: The text of the error the guard raises (see DuckDBRunner).
_GUARD = "dbt_merge: the merge's transaction was ended by another call on this connection"


class DuckDBRunner:
    """The flow's statements and dbt-duckdb's catalog look-ups, on one connection that the merge
    must have to itself: DuckDB 2.0 runs one call of a connection at a time (a second call, from
    another thread, is refused as busy), keeps one current result per connection (execute()
    replaces it), and runs a statement in whatever transaction the connection has.

    - A query's rows come from a result of its own (a relation of `sql()`), never from the
      connection's current result, which another thread's execute() replaces. `sql()` is
      refused while another call's result is unfinished, so the merge never replaces one.
    - Statements are sent in batches, with the next query or with the COMMIT: the target's
      write and the commit that follows it are one call, which no other thread can enter.
    - Each batch first checks, in the same call, that the connection is still in the merge's
      transaction (another call's COMMIT or ROLLBACK ends it).
    - Any of that, or a refusal, raises ConnectionInUse; rollback() waits while another call
      runs, and rolls back only the merge's own transaction.
    - DuckDB runs every statement of a call but the last as one step, and may refuse the rest
      of the call as busy after that step ran: a BEGIN or COMMIT that raised "busy" may have
      run. So the merge's transaction holds a marker, a temporary table created with the
      BEGIN (one step) and given a row with the COMMIT (one step); after a refusal, the marker
      says what ran: absent, nothing of the merge is committed; present with its row and the
      transaction over, the whole merge is. The marker is dropped once the transaction ends.
    """

    def __init__(self, con):
        self.con = con
        self._pending: list[str] = []
        self._transaction: int | None = None
        self._marker: str | None = None  # the temporary table that says what ran (see class)

    def read(self, sql: str, params: list | None = None) -> list[tuple]:
        """The rows of a query (after the statements sent so far)."""
        return self.query(sql, params)[1]

    def query(self, sql: str, params: list | None = None) -> tuple[list[str], list[tuple]]:
        self._flush()
        relation = self._call(lambda: self.con.sql(sql, params=params))
        if relation is None:
            return [], []
        # columns may ask the engine too (a call another thread's can refuse as busy)
        return self._call(lambda: (list(relation.columns), relation.fetchall()))

    def statement(self, sql: str) -> None:
        self._pending.append(sql)

    def call(self, call):
        """call(), with DuckDB's refusals of a connection in use raised as ConnectionInUse."""
        return self._call(call)

    def in_transaction(self) -> bool:
        """Whether the connection has a transaction open (the caller's, or another thread's):
        two statements then share its id (each runs in a transaction of its own otherwise).
        BEGIN would tell too, but its failure aborts that transaction. An aborted transaction
        (a statement failed in it) is open until it is rolled back."""
        query = "select current_transaction_id()"
        try:
            return self.read(query) == self.read(query)
        except ConnectionInUse as error:
            if error.reason == "open":
                return True
            raise

    def begin(self) -> None:
        self._marker = f"dbt_merge_transaction_{uuid.uuid4().hex}"
        script = (f"begin\n;\ncreate temporary table {quote(self._marker)} (committed boolean)"
                  "\n;\nselect 1")
        try:
            self._call(lambda: self.con.sql(script))  # all but the SELECT in one step, unread
        except duckdb.TransactionException as error:  # one began since in_transaction()
            self._marker = None
            raise ConnectionInUse("another call began a transaction on it", "open") from error
        except ConnectionInUse:
            # refused as busy, maybe after its BEGIN ran (see class): end what it began
            if self._marker_rows() not in ("absent", "unknown"):  # ours, or aborted: no use
                self.rollback()
            self._marker = None
            raise
        try:
            self._transaction = self.read("select current_transaction_id()")[0][0]
        except BaseException:
            self.rollback()
            raise

    def commit(self) -> None:
        """Send the statements not sent yet, mark the transaction and COMMIT, in one step. When
        DuckDB refused the call as busy after that step ran, the merge is committed: return as
        for a commit (ConnectionInUse otherwise)."""
        self._pending.append(f"insert into {self._marker_name()} values (true)")
        try:
            self._flush(["commit"], step=True)
        except ConnectionInUse:
            if self._marker_rows() != [(True,)]:  # its row is there only if the step ran
                raise
        self._transaction = None
        self._drop_marker()

    def rollback(self, patience: float = 60.0) -> bool:
        """Roll the merge's transaction back (what it has not sent is dropped), waiting up to
        `patience` seconds while another thread's call runs. True when nothing of the merge is
        committed (its marker is gone: this rollback or another call's ended it); False when
        another call committed a part of it, or the wait ran out."""
        self._pending = []
        deadline = time.monotonic() + patience
        script = self._guard() + "\n;\nrollback"
        try:
            while True:
                try:
                    self.con.execute(script)
                    break
                except duckdb.ResourceInUseException:
                    if time.monotonic() > deadline:
                        return False
                    time.sleep(0.002)
                except duckdb.TransactionException as error:
                    if "aborted" not in str(error):
                        break  # no transaction: another call ended it
                    script = "rollback"  # an aborted transaction runs nothing else, not the guard
                except duckdb.InvalidInputException as error:
                    if _GUARD in str(error):
                        break  # not the merge's transaction: another call ended it
                    raise
            if self._marker is None:
                return True
            rows = self._marker_rows(patience)
            if rows == "absent":
                return True
            self._drop_marker(patience)  # committed by another call, in part
            return False
        finally:
            self._transaction = None
            self._marker = None

    def load_relation(self, relation: Relation) -> Relation | None:
        """load_cached_relation: the relation as the catalog names it (table or view), or None."""
        rows = self.read(
            "select table_type from information_schema.tables"
            " where table_catalog = ? and table_schema = ? and table_name = ?",
            [relation.database, relation.schema, relation.identifier],
        )
        if not rows:
            return None
        return replace(relation, type="view" if rows[0][0] == "VIEW" else "table")

    def get_columns(self, relation: Relation) -> list[Column]:
        """adapter.get_columns_in_relation: every column in order, with DuckDB's type name."""
        rows = self.read(f"describe select * from {relation}")
        return [Column(row[0], row[1]) for row in rows]

    def drop_relation(self, relation: Relation) -> None:
        self.statement(f"drop {'view' if relation.is_view else 'table'} if exists {relation}")

    def _guard(self) -> str:
        """A statement that fails, with _GUARD, unless the connection is in the merge's
        transaction (none before begin())."""
        if self._transaction is None:
            return "select 1 where false"
        message = _GUARD.replace("'", "''")
        return (f"select error('{message}') where current_transaction_id() <> "
                f"{int(self._transaction)}")

    def _flush(self, tail: list[str] | tuple = (), step: bool = False) -> None:
        """Send the pending statements and `tail` in one call after the guard; with `step`,
        all of them in its first step (see the class): a last SELECT, left unread, follows."""
        if not self._pending and not tail:
            return
        # a newline before each ';' ends a line comment the statement may end with
        script = "\n;\n".join([self._guard(), *self._pending, *tail])
        self._pending = []
        if step:
            # sql() runs all but the last statement now, and keeps the SELECT unread: no
            # result of the merge is left on the connection (execute() would leave one)
            self._call(lambda: self.con.sql(script + "\n;\nselect 1"))
        else:
            self._call(lambda: self.con.execute(script))

    def _call(self, call):
        try:
            return call()
        except duckdb.Error as error:
            raise self.translated(error) from error

    def translated(self, error: Exception) -> Exception:
        """DuckDB's `error` as ConnectionInUse when it says another call is in the way (see the
        class), else `error` itself."""
        text = str(error)
        if isinstance(error, duckdb.ResourceInUseException):
            if "unfinished result" in text:
                return ConnectionInUse("a result of execute() was not fetched to the end",
                                       "unfinished")
            return ConnectionInUse("connection is busy with another call")
        if isinstance(error, duckdb.InterruptException):  # a call began while a result was read
            return ConnectionInUse("another call interrupted a query of the merge")
        if isinstance(error, duckdb.TransactionException) and "aborted" in text:
            if self._transaction is None:
                return ConnectionInUse("a transaction is open, and aborted", "open")
            return ConnectionInUse("a statement that was not the merge's failed inside the "
                                   "merge's transaction")
        if isinstance(error, duckdb.InvalidInputException) and _GUARD in text:
            return ConnectionInUse("another call ended the merge's transaction (a COMMIT or "
                                   "ROLLBACK)")
        if self._transaction is not None and self._transaction_ended():
            # a query sent with nothing pending carries no guard: another thread's ROLLBACK
            # (of the abort its own failed BEGIN caused) ended the merge's transaction, and the
            # query then ran outside it, where the work relations are gone ("Table with name
            # t__dbt_merge_..._cnv does not exist")
            return ConnectionInUse("another call ended the merge's transaction (a COMMIT or "
                                   "ROLLBACK)")
        return error

    def _marker_name(self) -> str:
        return f"temp.main.{quote(self._marker)}"

    def _marker_rows(self, patience: float = 60.0):
        """The marker's rows as the connection sees them now (waiting while it is busy):
        "absent" (not created, or rolled back), "aborted" (the connection's transaction is),
        "unknown" (busy all along), else its rows."""
        if self._marker is None:
            return "absent"
        deadline = time.monotonic() + patience
        while True:
            try:
                return self.con.sql(f"select committed from {self._marker_name()}").fetchall()
            except duckdb.CatalogException:
                return "absent"
            except duckdb.TransactionException as error:
                return "aborted" if "aborted" in str(error) else "unknown"
            except (duckdb.ResourceInUseException, duckdb.InterruptException):
                if time.monotonic() > deadline:
                    return "unknown"
                time.sleep(0.002)

    def _drop_marker(self, patience: float = 60.0) -> None:
        """Drop the marker (committed with the merge's transaction), waiting while the
        connection is busy; a marker is left only when it stays busy for `patience` seconds."""
        if self._marker is None:
            return
        deadline = time.monotonic() + patience
        while True:
            try:
                self.con.execute(f"drop table if exists {self._marker_name()}")
                break
            except (duckdb.ResourceInUseException, duckdb.InterruptException):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.002)
            except duckdb.TransactionException:
                break  # another call's aborted transaction: its rollback drops nothing of ours
        self._marker = None

    def _transaction_ended(self) -> bool:
        """Whether the connection is no longer in the merge's transaction (False when that
        cannot be told: the connection busy or its transaction aborted)."""
        try:
            now = self.con.sql("select current_transaction_id()").fetchall()[0][0]
        except duckdb.Error:
            return False
        return now != self._transaction
