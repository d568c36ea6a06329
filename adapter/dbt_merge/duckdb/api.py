"""merge_table: merge rows into a DuckDB table from Python, on the caller's connection.

The door is thin, as merge_dataframe's is: the options are read and checked by the package's
macros (validate_merge_config), and the merge is the materialization's own flow
(macros/flow/run_merge.sql), rendered in the stand-in context (dbt_merge.render) with `duckdb__`
macros first. What dbt-duckdb would give the flow (relations, columns, a statement runner, one
transaction) comes from dbt_merge.duckdb.connection.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from dbt_merge.duckdb.connection import (
    Column,
    ConnectionInUse,
    DuckDBRunner,
    Relation,
    quote,
)
from dbt_merge.duckdb.history import create_table, refuse_unusable
from dbt_merge.duckdb.names import (
    arrow_decimal256_problem,
    decimal_objects_problem,
    error_reason,
    name_problem,
    reads_table,
    relation_problem,
    resolve_target,
    source_names,
)
from dbt_merge.errors import MergeError
from dbt_merge.options import MergeOptions, merge_config
from dbt_merge.render import MacroContext, door_context, source_wording
from dbt_merge.result import MergeResult

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+; the annotations are never evaluated
    from typing import Unpack

#: The name the source is read under (_source_reader): a Python variable DuckDB finds by name.
SOURCE_NAME = "__dbt_merge_source"

#: The options that shape a Spark table the call would create: a DuckDB table has none of them.
REFUSED = {
    name: ((), "shapes a Spark table; a DuckDB table has no such setting. Leave it out.")
    for name in ("file_format", "partition_by", "tblproperties", "options")
}


def merge_table(
    connection: duckdb.DuckDBPyConnection,
    source: Any,
    target: str,
    key_columns: str | Sequence[str],
    strategy: str = "upsert",
    **options: Unpack[MergeOptions],
) -> MergeResult:
    """Merge `source` into the table `target` of the DuckDB `connection`, and return what the
    merge did.

    target: a table name as DuckDB reads it on this connection ("table", "schema.table",
    "database.schema.table", each part in double quotes where it needs them: '"my.t"'): an
    existing table of a writable database, or no object yet in an existing schema (the first
    merge creates the table). Anything else (a view, a temporary table or view, a schema or
    database that does not exist, a read-only database, text that is not one table name) is
    refused. source: an Arrow table (or anything DuckDB scans: a record batch reader, pandas,
    polars), a DuckDBPyRelation of this connection, or one SQL query (str). key_columns: the
    key, a column name or a list (dbt's `unique_key`); strategy: upsert, insert, update,
    full_merge or deduplicate. Every other option is the dbt config option of the same name,
    with the same meaning (see the README's options table); full_refresh=True rebuilds the
    table.

    One transaction, begun and committed here (the connection must have none open), on a
    connection no other thread uses meanwhile: on any failure it is rolled back and the target
    is exactly as it was. No temporary table or view is left, and no setting is changed.
    Raises MergeError on a refused target, source, options or source rows.
    """
    name = str(target).strip()
    prefix = f"dbt_merge: table '{name}': "

    def fail(message: str) -> None:
        raise MergeError(prefix + source_wording(message, "the source"))

    config = merge_config(key_columns, strategy, options, refused=REFUSED, fail=fail)
    full_refresh = bool(options.get("full_refresh"))
    runner = DuckDBRunner(connection)
    began, rolled_back = False, False
    try:
        found = resolve_target(connection, name, read=runner.read)
        refusal = found.refusal()
        if refusal is not None:
            raise MergeError(prefix + refusal)
        with _table_turn(runner, found.relation, dry_run=bool(config.get("dry_run"))):
            # under the table's lock: what another merge made of the name meanwhile (created
            # it, or its commit, which this merge's transaction begun after it then sees)
            found = resolve_target(connection, name, read=runner.read)
            refusal = found.refusal()
            if refusal is not None:
                raise MergeError(prefix + refusal)
            this = found.relation
            macros = _macros(runner, config, this, full_refresh, fail)
            cfg = macros.validate_merge_config()
            if isinstance(source, str):
                select, reader = _source_query(runner, source, prefix), None
            else:
                reader = _source_reader(runner, source, prefix)
                select = reader.sql_query()
            _refuse_renamed_columns(source, prefix)
            if runner.in_transaction():
                raise ConnectionInUse("the connection has a transaction open", "open")
            if cfg.get("history_table"):
                # checked on a dry run too (it says what the merge would refuse), not created
                _create_history_table(connection, macros, cfg["history_table"], this, prefix,
                                      versions=cfg.get("strategy") == "history",
                                      create=not cfg.get("dry_run"))
            runner.begin()
            began = True
            try:
                existing = None if found.kind == "nothing" else this
                rebuild = existing is None or bool(full_refresh)
                stats = macros.run_merge(cfg, this, existing, rebuild, select)
                if existing is None and not stats.get("dry_run"):
                    _check_created(runner, connection, name, this, prefix)
                if stats.get("dry_run"):
                    runner.rollback()
                else:
                    runner.commit()
            except BaseException:
                rolled_back = runner.rollback()
                if not runner.committed:  # the COMMIT refused as busy after it ran: merged
                    raise
    except ConnectionInUse as error:
        raise MergeError(prefix + _in_use(error, began, rolled_back)) from None
    del reader  # what it registered is released with it
    return MergeResult.from_stats(stats)


def _create_history_table(
    connection: Any, macros: MacroContext, name: str, this: Any, prefix: str,
    versions: bool = False, create: bool = True,
) -> None:
    """merge_history_table, checked (a table the row can be appended to: refused before anything
    is written otherwise) and created if missing before the merge's transaction begins, on a
    cursor of its own (committed at once), one thread at a time, as the dbt materialization
    creates it: two merges' transactions that both create it would fail with `Catalog
    write-write conflict`."""
    relation = macros.get("merge_history_relation")(name, this)
    columns = [c for c, _ in macros.get("merge_history_columns")()]
    cursor = connection.cursor()
    try:
        refuse_unusable(cursor, relation, name, columns, prefix, MergeError)
        if not create:
            return
        try:
            add_versions = macros.get("merge_history_add_versions_sql")
            create_table(cursor, macros.get("create_merge_history_sql")(relation),
                         add_versions(relation) if versions else None)
        except duckdb.Error:
            pass  # left to the merge's own statement, which fails inside its transaction
    finally:
        cursor.close()


#: One lock per table of a database this process writes (see _table_turn).
_TABLE_LOCKS: dict[tuple[str, str, str, str], threading.Lock] = {}
_TABLE_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def _table_turn(runner: DuckDBRunner, relation: Relation, dry_run: bool) -> Iterator[None]:
    """Merges into one table take turns, each from before its transaction begins until after
    it commits (or rolls back), so each one's transaction sees the others' commits. DuckDB's
    transactions see a snapshot: two merges on two cursors of one database, at once, would
    each find a new key missing and both insert it (DuckDB validates no key of a table without
    a PRIMARY KEY). A database file is opened for writing by one process only, so a lock of
    this process per (database file, table) serializes every merge_table into that table; an
    in-memory database has no file, and merges into tables of one name in two of them take
    turns too (they only wait). A dry run writes nothing and reads its own snapshot: it does not
    wait."""
    if dry_run:
        yield
        return
    rows = runner.read("select path from duckdb_databases() where database_name = ?",
                       [relation.database])
    path = os.path.realpath(rows[0][0]) if rows and rows[0][0] else ""
    key = (path, *(str(p or "").lower() for p in (relation.database, relation.schema,
                                                  relation.identifier)))
    with _TABLE_LOCKS_GUARD:
        lock = _TABLE_LOCKS.setdefault(key, threading.Lock())
    with lock:
        yield


def _macros(
    runner: DuckDBRunner, config: dict, this: Relation, full_refresh: bool, fail
) -> MacroContext:
    """The package's macros for one merge into `this`, on the runner's connection."""
    name = f"{this.schema}.{this.identifier}"
    invocation = str(uuid.uuid4())
    return MacroContext(
        config,
        runner.query,
        fail,
        model_name=name,
        engine="duckdb",
        error=MergeError,
        run_statement=runner.statement,
        context=door_context(
            this=this,
            model={"name": name, "unique_id": f"merge_table.{name}"},
            invocation_id=invocation,
            full_refresh=full_refresh,
            relation=Relation,
            column=Column,
            load_cached_relation=runner.load_relation,
            make_temp_relation=lambda base, suffix: runner.work_relation(
                Relation(None, None, base.identifier + suffix, "view")
            ),
        ),
        adapter_methods={
            "get_columns_in_relation": runner.get_columns,
            "drop_relation": runner.drop_relation,
            "commit": lambda: None,
        },
    )


def _source_query(runner: DuckDBRunner, source: str, prefix: str) -> str:
    """A SQL source as it is, once DuckDB's parser finds it is one query (a SELECT, WITH,
    VALUES, FROM ... statement), before anything runs: a second statement would run inside the
    merge's transaction and commit with it."""
    try:
        statements = runner.call(lambda: runner.con.extract_statements(source))
    except duckdb.ParserException as error:
        raise MergeError(
            prefix + f"the source query does not parse: {str(error).splitlines()[0]}. Nothing ran "
            "and nothing was changed."
        ) from None
    if len(statements) == 1 and statements[0].type == duckdb.StatementType.SELECT:
        return source
    if len(statements) != 1:
        what = f"{len(statements)} statements" if statements else "no statement"
    else:
        kind = statements[0].type.name
        what = f"{'an' if kind[0] in 'AEIOU' else 'a'} {kind} statement"
    raise MergeError(
        prefix + f"the source query is {what}: merge_table takes one query (SELECT, WITH, VALUES, "
        "FROM ...) that returns the rows to merge. Nothing ran and nothing was changed."
    )


def _refuse_renamed_columns(source: Any, prefix: str) -> None:
    """A source object with a column DuckDB or the merge would take for another
    (names.name_problem: an empty name, names equal but for case), as the object names them.
    A SQL query is read as DuckDB reads it (its columns named as DuckDB names them)."""
    problem = name_problem(source_names(source) or (), "the source")
    if problem is not None:
        raise MergeError(prefix + problem + " in the source. Nothing was changed.")


def _source_reader(runner: DuckDBRunner, source: Any, prefix: str) -> duckdb.DuckDBPyRelation:
    """A relation of the connection that reads `source` (an Arrow table or reader, a pandas or
    polars DataFrame, a relation of this connection) where it lives, as DuckDB reads a Python
    object by its name: the object is registered under a name of DuckDB's own for as long as
    the relation lives, with no view or other object in the catalog (nothing to drop, nothing
    a rollback or another thread could touch). DuckDB refuses what it cannot read, and a
    relation of a connection to another database."""
    connection = runner.con
    if resolve_target(connection, SOURCE_NAME, read=runner.read).kind != "nothing":
        raise MergeError(
            prefix + f"the connection has an object named {SOURCE_NAME}, the name merge_table "
            "reads the source under. Rename it. Nothing was changed."
        )
    problem = arrow_decimal256_problem(source)
    if problem is not None:
        raise MergeError(prefix + f"the source's {problem}. Nothing was changed.")
    __dbt_merge_source = source  # noqa: F841 (read below by DuckDB, by its name)
    try:
        relation = connection.sql(f"select * from {SOURCE_NAME}")
        problem = decimal_objects_problem(
            source, lambda name: [row[0] for row in relation.project(quote(name)).fetchall()])
    except duckdb.Error as error:
        if runner.translated(error) is not error:
            raise runner.translated(error) from error
        reason = relation_problem(source) or error_reason(error)
        raise MergeError(
            prefix + f"DuckDB cannot read the source ({type(source).__name__}): "
            f"{reason} merge_table reads an Arrow table or reader, a pandas "
            "or polars DataFrame, a relation of this connection, or one SQL query. Nothing was "
            "changed."
        ) from None
    if problem is not None:
        raise MergeError(prefix + f"the source's {problem}. Nothing was changed.")
    return relation


def _check_created(
    runner: DuckDBRunner, connection: duckdb.DuckDBPyConnection, name: str, this: Relation,
    prefix: str,
) -> None:
    """The merge created `this` where CREATE TABLE <name> would (resolve_target): refuse,
    before the commit, unless DuckDB now reads the name as that very table."""
    if not reads_table(connection, name, this, read=runner.read):
        raise MergeError(
            prefix + f"DuckDB does not read the name as the table the merge created, {this}, "
            "so nothing was written. Name the table with all three parts (database.schema.table)."
        )


def _in_use(error: ConnectionInUse, began: bool, rolled_back: bool) -> str:
    if error.reason == "open":
        return (
            "the connection has a transaction open; merge_table runs the merge in a transaction "
            "of its own. Commit or roll back first. The target was not changed."
        )
    if error.reason == "unfinished" and not began:
        return (
            "the connection holds a result that was not fetched to the end (execute() of this "
            "thread or another). Fetch it (fetchall()) or close it (complete()) first; "
            "merge_table would replace it. Nothing was changed."
        )
    return (
        f"another thread is using this connection (DuckDB refused a call of the merge: "
        f"{error.why}). A DuckDB connection runs one call at a time, and what another thread runs "
        "between the merge's calls would run inside the merge's transaction. Give each thread its "
        "own connection (connection.cursor())."
        + (" Nothing was changed." if not began
           else " The merge was rolled back: nothing of it was written." if rolled_back
           else " The merge stopped without a rollback: another call ended its transaction (the "
           "target's write and the merge's COMMIT are one call, which had not run; a first "
           "build or full refresh may have been committed by that call), or kept the "
           "connection busy for a minute (then roll back: connection.rollback()).")
    )
