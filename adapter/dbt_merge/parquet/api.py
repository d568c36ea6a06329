"""merge_parquet_dataset: merge a source into a folder of Parquet files, in DuckDB.

The door is what merge_table's is: the merge is the materialization's own flow
(macros/flow/run_merge.sql), rendered in the stand-in context (dbt_merge.render), on the
caller's DuckDB connection (or a private one). What is particular to files is the writer's
(writer.py), which the flow calls through `dbt_merge_writer` (macros/write/target_writer.sql):

1. here: the config, the folder (paths.py) and its lock (commit.py), the source registered
   and viewed as Parquet files store it (types.py: HUGEINT as DECIMAL(38,0), ...; a type that
   does not round-trip is refused), the dataset presented as the target relation, a view over
   its files read with one schema, union_by_name (schema.py), hive columns typed as the
   source's;
2. the flow: stage, plan (schema changes too), check, classify, count, check the counts;
3. the writer: candidate files by Parquet statistics and hive values (scope_target), the
   files holding a changed row rewritten and the new rows written to new files in a work
   folder (apply_changes, rebuild_target);
4. here: publish with one atomic directory swap (commit.py), with the history row; files
   holding no changed row are not touched. With defer_publish the publish is left to the
   caller (report.pending): the dbt materialization publishes after the view and post-hooks.

Nothing is written to the dataset before step 4, so every error leaves it as it was.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import duckdb

from dbt_merge.options import MergeOptions, merge_config
from dbt_merge.parquet import commit, paths
from dbt_merge.parquet import history as merge_history
from dbt_merge.parquet import sql as q
from dbt_merge.parquet.errors import ParquetMergeError
from dbt_merge.parquet.session import MergeReport, Pending, Session, check_file_options
from dbt_merge.parquet.sql import Column
from dbt_merge.render import MacroContext, door_context, source_wording
from dbt_merge.result import DictReadableResult, MergeResult

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+; the annotations are never evaluated
    from typing import Unpack

STAT_NAMES = ("inserted", "updated", "deleted", "unchanged", "total")
DEFAULT_ROWS_PER_FILE = 1_000_000
DEFAULT_ROW_GROUP_SIZE = 122_880


def merge_parquet_dataset(
    source: Any,
    target_path: str | os.PathLike,
    key_columns: str | Sequence[str],
    strategy: str = "upsert",
    dedup_order_by: str | Sequence[str] | None = None,
    compression: str = "zstd",
    *,
    connection: duckdb.DuckDBPyConnection | None = None,
    rows_per_file: int = DEFAULT_ROWS_PER_FILE,
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    memory_limit: str | None = None,
    durable: bool = True,
    **options: Unpack[MergeOptions],
) -> MergeResult:
    """Merge `source` into the Parquet dataset at `target_path` and return the statistics, a
    MergeResult as merge_table's (inserted, updated, deleted, unchanged, total; held_back with
    merge_update_condition, dry_run). Until the next release it can still be read as the dict
    it used to be (`result["inserted"]`, with a DeprecationWarning).

    source: a PyArrow table or record batch reader (or anything DuckDB scans: pandas, polars,
        a DuckDB relation of `connection`), or a path to Parquet files: a file, a folder
        (every `*.parquet` below it), a glob, or a list of those.
    target_path: a local folder, created by the first merge; readers read
        `target_path/**/*.parquet`. Resolved once as the file system resolves it (symlinks,
        `..`): a symlinked folder is merged into where it points. A file is refused.
    key_columns: the key, a column name or a list (dbt's `unique_key`).
    strategy: upsert, insert, update, full_merge, deduplicate or history (see the README).
    dedup_order_by: deduplicate only: which row of a key to keep, e.g. ['version desc'].
    compression: the Parquet codec of the files written.

    connection: a DuckDB connection to run on, with no transaction open (default: a private
        in-memory one, which spills to the dataset's work folder); rows_per_file /
        row_group_size: the size of the files written; memory_limit: DuckDB's memory_limit for
        the private connection; durable: fsync before and after publishing.

    Every other keyword is the dbt config option of the same name, as merge_dataframe takes
    them (dbt_merge.options): merge_update_columns, merge_exclude_columns,
    merge_check_columns, detect_unchanged, incremental_predicates, on_key_outside_predicates,
    max_delete_fraction, on_schema_change, merge_update_condition, delete_condition,
    soft_delete_column, soft_delete_timestamp_column, dry_run, merge_history_table (a table
    of `connection`, which is then required), partition_by (hive partition columns of a new
    dataset), full_refresh (replace the whole dataset with the checked source). file_format,
    tblproperties, options and full_merge_write describe a table and are refused.

    Raises ParquetMergeError, leaving the dataset unchanged, on bad config or source rows, or
    when another writer changed the dataset while the merge ran. A dry run writes nothing
    anywhere.
    """
    report = merge_with_report(
        source,
        target_path,
        key_columns,
        strategy=strategy,
        compression=compression,
        connection=connection,
        rows_per_file=rows_per_file,
        row_group_size=row_group_size,
        memory_limit=memory_limit,
        durable=durable,
        dedup_order_by=dedup_order_by,
        **options,
    )
    return DictReadableResult.from_stats(report.stats)


#: The options of a table that a dataset has no use for: (the values accepted, why no other).
REFUSED = {
    "file_format": (
        ("parquet",),
        "is not possible for a Parquet dataset: its files are Parquet (file_format chooses a "
        "table's format). Leave it out.",
    ),
    "tblproperties": (
        (),
        "has nothing to apply to: a Parquet dataset is a folder of files, with no table "
        "properties. Leave it out.",
    ),
    "options": (
        (),
        "has nothing to apply to: a Parquet dataset is a folder of files, with no table "
        "options (its file options are compression, rows_per_file and row_group_size). "
        "Leave it out.",
    ),
    "full_merge_write": (
        ("auto",),
        "chooses how full_merge writes a table (MERGE or an overwrite); a Parquet dataset is "
        "always written by rewriting just the files that hold a changed row. Leave it out.",
    ),
}


def merge_with_report(
    source: Any,
    target_path: str | os.PathLike,
    key_columns: str | Sequence[str],
    *,
    strategy: str = "upsert",
    compression: str = "zstd",
    connection: duckdb.DuckDBPyConnection | None = None,
    rows_per_file: int = DEFAULT_ROWS_PER_FILE,
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    memory_limit: str | None = None,
    durable: bool = True,
    error_prefix: str | None = None,
    defer_publish: bool = False,
    history: dict[str, Any] | None = None,
    **options: Unpack[MergeOptions],
) -> MergeReport:
    """merge_parquet_dataset, returning a MergeReport: the files replaced and written too (named
    run_merge before 0.2.0, which it is not: the flow macro of that name is what it renders).
    error_prefix: how errors start (default `dbt_merge: dataset '<target_path>': `).
    defer_publish: write everything but leave the dataset as it is; report.pending.publish()
    makes the merge live later (the dbt materialization publishes after its hooks).
    history: for merge_history_table, what a dbt model gives the history row and relation
    (model_unique_id, invocation_id, database, schema). The history table is checked before
    anything is written and created if missing; its row is written in a transaction of its own
    committed right after the publish (with defer_publish, when report.pending publishes)."""
    prefix = f"dbt_merge: dataset '{target_path}': " if error_prefix is None else error_prefix

    writer = None

    def fail(message: str) -> None:
        if error_prefix is None:
            message = _api_wording(message)
        view = getattr(writer, "view", None)
        if view and view != q.quote(str(writer.root)):
            # the dataset's view under another name than its folder (a caller's object has
            # that name): messages name the dataset (red team helper-92)
            message = message.replace(view, q.quote(str(writer.root)))
        raise ParquetMergeError(prefix + message)

    config = merge_config(key_columns, strategy, options, refused=REFUSED, fail=fail)
    config.pop("file_format", None)
    full_refresh = bool(options.get("full_refresh"))
    if config.get("merge_history_table") and connection is None:
        fail(
            "merge_history_table needs connection=: the history is a table of the DuckDB "
            "connection the merge runs on, and without one the merge runs on a private "
            "in-memory connection that is gone when the call returns. Pass connection= (a "
            "connection to the database that keeps the history). The dataset was not changed."
        )
    # the folder the path names, as the file system resolves it (`~`, symlinks, `..`): the
    # swap replaces that folder, never a symlink on the way to it; refused there: an object
    # store, a path readers cannot glob, a file, another table format's table
    try:
        root = paths.resolve(target_path, fail)
    except ParquetMergeError as e:
        if str(e).startswith(prefix):
            raise
        raise ParquetMergeError(prefix + str(e)) from None

    settings = check_file_options(
        compression, rows_per_file, row_group_size, config.pop("partition_by", None), fail
    )
    dry_run = bool(config.get("dry_run"))
    tx_id = commit.new_id()
    con = connection
    if con is None:
        # spills to the work folder; a dry run's (if any) to the system's temporary folder
        spill = (
            Path(tempfile.gettempdir()) / f"dbt_merge-{tx_id}"
            if dry_run
            else commit.Transaction(root, commit.work_dir(root), tx_id).spill
        )
        con_settings = {"temp_directory": str(spill)}
        if memory_limit:
            con_settings["memory_limit"] = memory_limit
        con = duckdb.connect(config=con_settings)
        con.execute("set enable_progress_bar = false")  # a library prints nothing
    con = getattr(con, "_cursor", con)  # dbt-duckdb wraps its cursor
    session = Session(con, tx_id, private=connection is None)
    # the flow of every door (macros/flow/run_merge.sql), written by the Parquet writer
    from dbt_merge.parquet.writer import ParquetWriter

    writer = ParquetWriter(session, None, None, None, root, settings, fail, full_refresh, durable)
    context = _context(session, root, history, bool(config.get("merge_history_table")), writer,
                       full_refresh)
    macros = MacroContext(
        config,
        session.query,
        fail,
        context=context,
        error=ParquetMergeError,
        adapter_methods={
            "get_columns_in_relation": lambda relation: session.describe(str(relation)),
            "drop_relation": lambda relation: session.con.execute(
                f"drop view if exists {relation}"
            ),
            "commit": lambda: None,
        },
        run_statement=lambda sql: session.con.execute(sql),
    )
    with contextlib.ExitStack() as stack:
        try:
            # what needs no dataset is checked before the dataset is locked (its folder, the
            # lock and missing parents created): the config, the connection, the history table
            cfg = macros.validate_merge_config()
            if not defer_publish and connection is not None and _in_transaction(con):
                fail(
                    "the connection has a transaction open; the merge publishes the dataset on "
                    "its own, and the caller could still roll back what it read. Commit or roll "
                    "back first. The target was not changed."
                )
            recorder = None
            if cfg.get("history_table"):
                recorder = merge_history.Recorder(con, config, context, cfg, fail)
            # a dry run writes nothing anywhere: no folder, no lock, no work files
            tx = stack.enter_context(commit.transaction(root, read_only=dry_run, tx_id=tx_id))
            started_at = datetime.datetime.utcnow()
            writer.m, writer.cfg, writer.tx = macros, cfg, tx
            merge = writer
            report = _run_flow(writer, macros, cfg, context, source)
            publish = merge.deferred
            if recorder is not None and not report.stats.get("dry_run"):
                recorder.ensure()
                publish = recorder.publishing(merge.deferred, report.stats, started_at, prefix)
            if not defer_publish:
                publish()
        finally:
            session.drop_all()
            if connection is None:
                con.close()
        if defer_publish:
            # the transaction (the lock, the work files) now belongs to the pending publish
            report.pending = Pending(merge.new_state, publish, stack.pop_all())
        return report


def run_merge(*args: Any, **kwargs: Any) -> MergeReport:
    """The name merge_with_report had before 0.2.0 (it is not the flow macro run_merge); it
    warns, and goes in the next release."""
    import warnings

    warnings.warn(
        "dbt_merge.parquet.run_merge is now merge_with_report (same arguments, same report); "
        "the old name goes in the next release.",
        DeprecationWarning,
        stacklevel=2,
    )
    return merge_with_report(*args, **kwargs)


def _run_flow(writer, macros: MacroContext, cfg, context, source: Any) -> MergeReport:
    """The shared flow (macros/flow/run_merge.sql) into the dataset, written by `writer`."""
    select, build = writer.prepare(source)
    this = context["this"]
    target = _Relation(this.database, this.schema, this.identifier, writer.view)
    existing = target if writer.files else None
    flow_cfg = dict(cfg)
    # the history row is written around the publish (_History), not by the flow (see
    # design/parquet-writer.md, merge_history_table)
    flow_cfg["history_table"] = None
    stats = macros.run_merge(flow_cfg, target, existing, build, select)
    report = writer.report
    report.stats = {
        k: stats[k] for k in (*STAT_NAMES, "held_back", "versions", "skipped") if k in stats
    }
    if stats.get("dry_run"):
        report.stats["dry_run"] = True
    return report


def _in_transaction(con) -> bool:
    """Whether the caller has a transaction open: two statements then share its id (each runs
    in a transaction of its own otherwise). A failed transaction counts as open."""
    query = "select current_transaction_id()"
    try:
        return con.execute(query).fetchall() == con.execute(query).fetchall()
    except duckdb.Error:
        return True


@dataclass(frozen=True)
class _Relation:
    """A relation as the macros see a dbt one. The dataset is one with its quoted path as its
    name (in messages) and no catalog entry (target_definition finds none); its database and
    schema are where merge_history_table goes by default."""

    database: str
    schema: str
    identifier: str
    name: str = ""

    def __str__(self) -> str:
        if self.name:
            return self.name
        return ".".join(q.quote(p) for p in (self.database, self.schema, self.identifier) if p)


def _context(session: Session, root: Path, history: dict[str, Any] | None, wanted: bool,
             writer: Any, full_refresh: bool) -> dict[str, Any]:
    """What the macros read from dbt's context (render.door_context): `this` (the dataset, in
    the connection's current database and schema, or the dbt model's), the model and the
    invocation (for the history row), no relation found by name (the dataset is `this`), work
    relations named with the session's prefix, and the writer."""
    info = history or {}
    database, schema = info.get("database") or "", info.get("schema") or ""
    if wanted and not (database and schema):
        database, schema = session.one("select current_database(), current_schema()")
    return door_context(
        this=_Relation(database, schema, str(root), q.quote(str(root))),
        model={
            "name": str(root),
            "unique_id": info.get("model_unique_id") or f"merge_parquet_dataset.{root}",
        },
        invocation_id=info.get("invocation_id") or session.prefix.strip("_"),
        full_refresh=full_refresh,
        relation=SimpleNamespace(
            create=lambda database=None, schema=None, identifier=None, type=None: _Relation(
                database or "", schema or "", identifier or ""
            )
        ),
        column=Column,
        load_cached_relation=lambda relation: None,
        make_temp_relation=lambda base, suffix: _Relation(
            "", "", "", q.quote(session.prefix + suffix.strip("_"))
        ),
        dbt_merge_writer=writer,
    )


def _api_wording(message: str) -> str:
    """The macros speak of a dbt model; the Python API has a source and a dataset: the doors'
    wording (render.source_wording: key_columns=, full_refresh=True, the source), then the
    dataset for the table."""
    return (
        source_wording(message, "the source")
        .replace("the target table", "the target dataset")
        .replace("The target was not changed.", "The dataset was not changed.")
    )
