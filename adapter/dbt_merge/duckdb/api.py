"""merge_table: merge rows into a DuckDB table from Python, on the caller's connection.

The door is thin, as merge_dataframe's is: the options are read and checked by the package's
macros (validate_merge_config), and the merge is the materialization's own flow
(macros/flow/run_merge.sql), rendered in the stand-in context (dbt_merge.render) with `duckdb__`
macros first. What dbt-duckdb would give the flow (relations, columns, a statement runner, one
transaction) comes from dbt_merge.duckdb.connection.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import duckdb

from dbt_merge.duckdb.connection import Column, DuckDBRunner, Relation, quote
from dbt_merge.errors import MergeError
from dbt_merge.options import MergeOptions, merge_config
from dbt_merge.render import MacroContext, source_wording
from dbt_merge.result import MergeResult

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+; the annotations are never evaluated
    from typing import Unpack

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
    """Merge `source` into the table `target` ("table", "schema.table" or
    "database.schema.table") of the DuckDB `connection`, and return what the merge did.

    source: an Arrow table (or anything DuckDB scans: a record batch reader, pandas, polars), a
    DuckDBPyRelation of this connection, or a SQL query (str). key_columns: the key, a column
    name or a list (dbt's `unique_key`); strategy: upsert, insert, update, full_merge or
    deduplicate. Every other option is the dbt config option of the same name, with the same
    meaning (see the README's options table). The table is created on the first merge (or
    rebuilt with full_refresh=True); its schema must exist.

    One transaction, begun and committed here (the connection must have none open): on any
    failure it is rolled back and the target is exactly as it was. No temporary table or view is
    left, and no setting is changed. Raises MergeError on bad options or source rows.
    """
    this = _target_relation(connection, target)
    name = f"{this.schema}.{this.identifier}"
    prefix = f"dbt_merge: table '{name}': "

    def fail(message: str) -> None:
        raise MergeError(prefix + source_wording(message, "the source"))

    config = merge_config(key_columns, strategy, options, refused=REFUSED, fail=fail)
    full_refresh = bool(options.get("full_refresh"))

    invocation = str(uuid.uuid4())
    runner = DuckDBRunner(connection)
    macros = MacroContext(
        config,
        runner.query,
        fail,
        model_name=name,
        engine="duckdb",
        error=MergeError,
        run_statement=runner.statement,
        context={
            "this": this,
            "model": {"name": name, "unique_id": f"merge_table.{name}"},
            "invocation_id": invocation,
            "invocation_args_dict": {},
            "local_md5": lambda text: hashlib.md5(str(text).encode()).hexdigest(),
            "load_cached_relation": runner.load_relation,
            "make_temp_relation": lambda base, suffix: Relation(
                None, None, base.identifier + suffix, "view"
            ),
            "should_full_refresh": lambda: bool(full_refresh),
            "api": SimpleNamespace(Column=SimpleNamespace(create=Column), Relation=Relation),
            "create_table_as": lambda temporary, relation, sql: (
                f"create {'temporary ' if temporary else ''}table {relation} as (\n{sql}\n)"
            ),
        },
        adapter_methods={
            "get_columns_in_relation": runner.get_columns,
            "drop_relation": runner.drop_relation,
            "commit": lambda: None,
        },
    )
    cfg = macros.validate_merge_config()
    if _in_transaction(connection):
        raise MergeError(
            prefix + "the connection has a transaction open; merge_table runs the merge in a "
            "transaction of its own. Commit or roll back first. The target was not changed."
        )
    view = None
    if isinstance(source, str):
        select = source
    else:
        view = "__dbt_merge_src_" + invocation.replace("-", "")
        connection.register(view, source)
        select = f"select * from {quote(view)}"
    try:
        connection.begin()
        try:
            existing = runner.load_relation(this)
            rebuild = existing is None or existing.is_view or bool(full_refresh)
            stats = macros.run_merge(cfg, this, existing, rebuild, select)
            connection.commit()
        except BaseException:
            connection.rollback()
            raise
    finally:
        if view is not None:
            connection.unregister(view)
    return MergeResult.from_stats(stats)


def _in_transaction(connection: duckdb.DuckDBPyConnection) -> bool:
    """Whether the caller has a transaction open: two statements then share its id (each runs
    in a transaction of its own otherwise). BEGIN would tell too, but its failure aborts the
    caller's transaction."""
    query = "select current_transaction_id()"
    return connection.execute(query).fetchall() == connection.execute(query).fetchall()


def _target_relation(connection: duckdb.DuckDBPyConnection, target: str) -> Relation:
    parts = [p.strip('" ') for p in str(target).split(".")]
    if len(parts) > 3 or not all(parts):
        raise MergeError(
            f"dbt_merge: table '{target}': the target must be 'table', 'schema.table' or "
            "'database.schema.table'."
        )
    current = connection.execute("select current_database(), current_schema()").fetchall()
    database, schema = current[0]
    parts = [database, schema][: 3 - len(parts)] + parts
    found = connection.execute(
        "select catalog_name, schema_name from information_schema.schemata"
        " where lower(catalog_name) = lower(?) and lower(schema_name) = lower(?)",
        parts[:2],
    ).fetchall()
    if not found:
        raise MergeError(
            f"dbt_merge: table '{target}': the schema '{parts[0]}.{parts[1]}' does not exist. "
            f"Create it first (create schema {quote(parts[1])})."
        )
    return Relation(found[0][0], found[0][1], parts[2], "table")
