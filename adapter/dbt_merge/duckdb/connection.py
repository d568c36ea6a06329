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

import contextlib
import functools
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


def _temporary(name: str) -> str:
    """A temporary table or view of this connection, by its name, qualified."""
    return f"temp.main.{quote(name)}"


def _names_work_relation(text: str, work: list[str]) -> bool:
    """Whether DuckDB's error `text` says a work relation of the merge does not exist: each
    is created inside the merge's transaction and named for this merge alone, so another call
    ended that transaction (and the statement ran outside it)."""
    return "does not exist" in text and any(
        f"name {name} does not exist" in text for name in work)


#: DuckDB's refusals that end once the other call does: waited out (see _patiently).
_BUSY = (duckdb.ResourceInUseException, duckdb.InterruptException)


def _patiently(call, deadline: float):
    """call(), again while DuckDB refuses it because another call is running (or
    interrupted it), until `deadline`; that refusal raised when the wait runs out, or at once
    when it is another call's unread result (which waiting does not end)."""
    while True:
        try:
            return call()
        except _BUSY as error:
            if "unfinished result" in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.002)


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
      run (another thread's interrupt() can stop a step in its middle: what it did stays in
      the transaction). Two temporary tables tell: `pending`, created (committed) in the
      BEGIN's step just before it, and `ours`, created inside the transaction; the COMMIT's
      step drops both, then commits. After a refusal, the transaction rolled back (which
      brings `pending` back if the step dropped it without committing): `pending` gone means
      the COMMIT's step ran (the merge is committed whole); `pending` there, it did not, and
      `ours` seen outside the transaction means another call committed a part of the merge.
      A merge that commits leaves neither table; a rollback drops them after.
    """

    def __init__(self, con):
        self.con = con
        self._pending: list[str] = []
        self._transaction: int | None = None
        # the names of the two temporary tables that say what ran (see the class), and of the
        # merge's work relations (temporary too)
        self._pending_table: str | None = None
        self._ours_table: str | None = None
        self._work: list[str] = []
        self.committed = False  # see rollback()

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
        mark = uuid.uuid4().hex
        self._pending_table = f"dbt_merge_pending_{mark}"
        self._ours_table = f"dbt_merge_transaction_{mark}"
        try:
            # one step: `pending` committed, BEGIN, `ours` inside the transaction
            self._call(lambda: self._step([
                f"create temporary table {_temporary(self._pending_table)} (x boolean)",
                "begin", f"create temporary table {_temporary(self._ours_table)} (x boolean)"]))
        except duckdb.TransactionException as error:  # one began since in_transaction()
            # `pending` was created inside that transaction, which the failed BEGIN aborted
            self._pending_table = self._ours_table = None
            raise ConnectionInUse("another call began a transaction on it", "open") from error
        except ConnectionInUse as error:
            # refused, maybe after the step ran (see class): end what it began (a transaction
            # open before it, error.reason "open", is the caller's: left as it is)
            if error.reason != "open" and self._exists(self._pending_table) is not False:
                self.rollback()
            self._pending_table = self._ours_table = None
            raise
        try:
            self._transaction = self.read("select current_transaction_id()")[0][0]
        except BaseException:
            self.rollback()
            raise

    def commit(self) -> None:
        """Send the statements not sent yet, drop the two tables and COMMIT, in one step.
        ConnectionInUse when DuckDB refused or interrupted it: rollback() then tells whether
        the step ran (`committed`)."""
        self._pending += [f"drop table {_temporary(table)}"
                          for table in (self._pending_table, self._ours_table)]
        self._flush(["commit"], step=True)
        self._transaction = None
        self._pending_table = self._ours_table = None

    def rollback(self, patience: float = 60.0) -> bool:
        """Roll the merge's transaction back (what it has not sent is dropped), waiting up to
        `patience` seconds while another thread's call runs, then drop its two tables. True
        when nothing of the merge is committed. False otherwise: `committed` is set when the
        COMMIT's step ran after all (the merge is committed whole: `pending`, which a rollback
        brings back, is gone); else another call committed a part of it (`ours` is there
        outside the transaction), or it cannot be told (the wait ran out)."""
        self._pending = []
        deadline = time.monotonic() + patience
        guard: str | None = self._guard()
        began = self._transaction is not None
        # the merge's transaction still open (or never begun): the COMMIT's step did not
        # commit, and the rollback drops `pending` in its own step (no other call between)
        uncommitted = not began or self._current_transaction(deadline) == self._transaction
        drop = [f"drop table if exists {_temporary(self._pending_table)}"] \
            if uncommitted and self._pending_table else []
        try:
            while True:
                try:
                    statements = ([guard] if guard else []) + ["rollback", *drop]
                    _patiently(functools.partial(self._step, statements, replace_result=True),
                               deadline)
                    break
                except _BUSY:
                    return False
                except duckdb.TransactionException as error:
                    if "aborted" not in str(error):
                        break  # no transaction: another call ended it
                    if guard is None:
                        return False  # aborted again and again: cannot be told
                    guard = None  # an aborted transaction runs nothing but its rollback
                except duckdb.InvalidInputException as error:
                    if _GUARD in str(error):
                        break  # not the merge's transaction: another call ended it
                    raise
            if self._ours_table is None:
                return True
            pending = self._exists(self._pending_table, patience)
            if pending is None:
                return False
            if not pending and not uncommitted:
                # only the COMMIT's step drops it outside a rollback (one that ran in part
                # and was interrupted is rolled back above, which brings it back)
                self.committed = True
                return False
            if pending:
                self._drop(self._pending_table, patience)
            ours = self._exists(self._ours_table, patience)
            if ours is False:
                return True
            # another call committed a part of the merge: its work relations too, maybe
            for table in [self._ours_table, *self._work]:
                self._drop(table, patience)
            return False
        finally:
            self._transaction = None
            self._pending_table = self._ours_table = None

    def work_relation(self, relation: Relation) -> Relation:
        """make_temp_relation's answer, noted: a rollback that finds a part of the merge
        committed by another call drops the work relations too."""
        self._work.append(relation.identifier)
        return relation

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
            self._call(lambda: self._step([script]))
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
        if self._transaction is not None and (
                _names_work_relation(text, self._work) or self._transaction_ended()):
            # a query sent with nothing pending carries no guard: another thread's ROLLBACK
            # (of the abort its own failed BEGIN caused) ended the merge's transaction, and the
            # query then ran outside it, where the work relations are gone ("Table with name
            # t__dbt_merge_..._cnv does not exist")
            return ConnectionInUse("another call ended the merge's transaction (a COMMIT or "
                                   "ROLLBACK)")
        return error

    def _step(self, statements: list[str], replace_result: bool = False) -> None:
        """Run `statements` as one step of one call (see the class), through sql(), which
        leaves no result on the connection: a last SELECT follows, unread. `replace_result`:
        where another call's unfinished result makes sql() refuse, run them through
        execute(), which replaces that result (a rollback must run)."""
        try:
            self.con.sql("\n;\n".join([*statements, "select 1"]))
        except duckdb.ResourceInUseException as error:
            if not (replace_result and "unfinished result" in str(error)):
                raise
            # no SELECT last: execute() would leave its result on the connection
            self.con.execute("\n;\n".join(statements))

    def _current_transaction(self, deadline: float) -> int | None:
        """The id of the connection's transaction now (waiting while it is busy, until
        `deadline`); None when that cannot be told (busy, aborted, an unread result)."""
        try:
            return _patiently(
                lambda: self.con.sql("select current_transaction_id()").fetchall()[0][0],
                deadline)
        except duckdb.Error:
            return None

    def _exists(self, table: str | None, patience: float = 60.0) -> bool | None:
        """Whether the connection sees the temporary `table` now, waiting while it is busy;
        None when that cannot be told (busy all along, or another call's unfinished result).
        An aborted transaction, which reads nothing, is rolled back first: nothing of it can
        commit."""
        if table is None:
            return False
        deadline = time.monotonic() + patience
        query = f"select count(*) from {_temporary(table)}"
        while True:
            try:
                _patiently(lambda: self.con.sql(query).fetchall(), deadline)
                return True
            except duckdb.CatalogException:
                return False
            except _BUSY:
                return None
            except duckdb.TransactionException as error:
                if "aborted" not in str(error) or time.monotonic() > deadline:
                    return None
                with contextlib.suppress(duckdb.Error):
                    self._step(["rollback"])

    def _drop(self, table: str, patience: float = 60.0) -> None:
        """Drop the temporary `table` or view of the merge (cleanup after a failure), waiting
        while the connection is busy; left only when it stays busy for `patience` seconds, or
        another call's transaction or unread result holds the connection."""
        def drop() -> None:
            kind = self.con.sql("select 'view' from duckdb_views() where temporary and "
                                "view_name = ?", params=[table]).fetchall()
            self._step([f"drop {kind[0][0] if kind else 'table'} if exists {_temporary(table)}"])
        with contextlib.suppress(duckdb.Error):
            _patiently(drop, time.monotonic() + patience)

    def _transaction_ended(self) -> bool:
        """Whether the connection is no longer in the merge's transaction (False when that
        cannot be told: the connection busy or its transaction aborted)."""
        now = self._current_transaction(deadline=0.0)  # asked once, not waited for
        return now is not None and now != self._transaction
