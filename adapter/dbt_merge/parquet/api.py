"""merge_parquet_dataset: merge a source into a folder of Parquet files, in DuckDB.

The steps, each in the module that owns it:

1. config, plan and checks: the package's own macros (macros.py), exactly as the `merge`
   materialization runs them;
2. stage the source as Parquet files store it (types.py: HUGEINT as DECIMAL(38,0), ...; a
   type that does not round-trip is refused), cast to the dataset's column types
   (uniqueness, matching and change detection are judged as the dataset stores the values);
   the dataset is read with one schema, union_by_name over all its files (schema.py);
3. find the files that may hold a source key from their Parquet statistics and hive
   partition values (sql.candidate_files_sql), and only those are read in full;
4. classify the matched rows with the file holding each one, count the statistics, run the
   guards (a key matching two dataset rows, full_merge's mass-delete guard);
5. write the rows of the files holding an updated or deleted row, plus the inserted rows, to
   new files in a work folder, sorted by the key;
6. publish with one atomic directory swap (commit.py); files holding no changed row are not
   touched. With defer_publish, step 6 is left to the caller (report.pending): the dbt
   materialization publishes after the model's view and post-hooks.

Nothing is written to the dataset before step 6, so every error leaves it as it was.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import duckdb

from dbt_merge.duckdb import history as duckdb_history
from dbt_merge.options import MergeOptions, merge_config
from dbt_merge.parquet import commit, layout, paths, schema, types
from dbt_merge.parquet import history as merge_history
from dbt_merge.parquet import sql as q
from dbt_merge.parquet.errors import ParquetMergeError
from dbt_merge.parquet.sql import DST, SRC, Column
from dbt_merge.render import MacroContext, source_wording
from dbt_merge.result import MergeResult

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+; the annotations are never evaluated
    from typing import Unpack

STAT_NAMES = ("inserted", "updated", "deleted", "unchanged", "total")
DEFAULT_ROWS_PER_FILE = 1_000_000
DEFAULT_ROW_GROUP_SIZE = 122_880


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
    pending: Pending | None = None  # run_merge(defer_publish=True): publish it to make it live


@dataclass
class Pending:
    """A merge whose files are written but not yet live (run_merge(defer_publish=True)). It
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
) -> dict[str, Any]:
    """Merge `source` into the Parquet dataset at `target_path` and return the statistics
    `{"inserted", "updated", "deleted", "unchanged", "total"}` (plus `held_back` with
    merge_update_condition, `dry_run` for a dry run).

    source: a PyArrow table or record batch reader (or anything DuckDB scans: pandas, polars,
        a DuckDB relation of `connection`), or a path to Parquet files: a file, a folder
        (every `*.parquet` below it), a glob, or a list of those.
    target_path: a local folder, created by the first merge; readers read
        `target_path/**/*.parquet`. Resolved once as the file system resolves it (symlinks,
        `..`): a symlinked folder is merged into where it points. A file is refused.
    key_columns: the key, a column name or a list (dbt's `unique_key`).
    strategy: upsert, insert, update, full_merge or deduplicate (see the README).
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
    report = run_merge(
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
    return MergeResult.from_stats(report.stats).as_dict()


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


def run_merge(
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
    """merge_parquet_dataset, returning a MergeReport (files replaced and written too).
    error_prefix: how errors start (default `dbt_merge: dataset '<target_path>': `).
    defer_publish: write everything but leave the dataset as it is; report.pending.publish()
    makes the merge live later (the dbt materialization publishes after its hooks).
    history: for merge_history_table, what a dbt model gives the history row and relation
    (model_unique_id, invocation_id, database, schema). The history table is checked before
    anything is written and created if missing; its row is written in a transaction of its own
    committed right after the publish (with defer_publish, when report.pending publishes)."""
    prefix = f"dbt_merge: dataset '{target_path}': " if error_prefix is None else error_prefix

    def fail(message: str) -> None:
        if error_prefix is None:
            message = _api_wording(message)
        raise ParquetMergeError(prefix + message)

    if strategy == "history":  # the dataset writer has no history write yet (docs/history.md)
        fail("strategy 'history' is not supported on Parquet datasets yet: it merges into DuckDB "
             "and Spark tables (merge_table, merge_dataframe, dbt models without a location). "
             "The target was not changed.")
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

    settings = _check_options(
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
    session = _Session(con, tx_id)
    context = _dbt_context(session, root, history, bool(config.get("merge_history_table")))
    shared = os.environ.get("DBT_MERGE_PARQUET_FLOW", "") == "shared"
    writer = None
    methods = None
    if shared:  # the flow of every door (run_merge.sql) with the Parquet writer (writer.py)
        from dbt_merge.parquet.writer import ParquetWriter

        writer = ParquetWriter(session, None, None, None, root, settings, fail, full_refresh,
                               durable)
        context.update(_flow_context(session, writer, full_refresh))
        methods = {
            "get_columns_in_relation": lambda relation: session.describe(str(relation)),
            "drop_relation": lambda relation: session.con.execute(
                f"drop view if exists {relation}"
            ),
            "commit": lambda: None,
        }
    macros = MacroContext(
        config,
        session.query,
        fail,
        context=context,
        error=ParquetMergeError,
        adapter_methods=methods,
        run_statement=(lambda sql: session.con.execute(sql)) if shared else None,
    )
    with contextlib.ExitStack() as stack:
        try:
            # what needs no dataset is checked before the dataset is locked (its folder, the
            # lock and missing parents created): the config, the connection, the history table
            cfg = macros.validate_merge_config()
            if not defer_publish and _in_transaction(con):
                fail(
                    "the connection has a transaction open; the merge publishes the dataset on "
                    "its own, and the caller could still roll back what it read. Commit or roll "
                    "back first. The target was not changed."
                )
            recorder = None
            if cfg.get("history_table"):
                recorder = _History(con, config, context, cfg, fail)
            # a dry run writes nothing anywhere: no folder, no lock, no work files
            tx = stack.enter_context(commit.transaction(root, read_only=dry_run, tx_id=tx_id))
            started_at = datetime.datetime.utcnow()
            if writer is not None:
                writer.m, writer.cfg, writer.tx = macros, cfg, tx
                merge = writer
                report = _run_flow(writer, macros, cfg, context, source)
            else:
                merge = _Merge(session, macros, cfg, tx, root, settings, fail, full_refresh,
                               durable)
                report = merge.run(source)
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


def _run_flow(writer, macros: MacroContext, cfg, context, source: Any) -> MergeReport:
    """The shared flow (macros/flow/run_merge.sql) into the dataset, written by `writer`."""
    select, build = writer.prepare(source)
    this = context["this"]
    target = _Relation(this.database, this.schema, this.identifier, writer.view)
    existing = target if writer.files else None
    flow_cfg = dict(cfg)
    # the history row is written around the publish (_History), not by the flow (see
    # docs/design/parquet-writer.md, merge_history_table)
    flow_cfg["history_table"] = None
    stats = macros.run_merge(flow_cfg, target, existing, build, select)
    report = writer.report
    report.stats = {k: stats[k] for k in (*STAT_NAMES, "held_back") if k in stats}
    if stats.get("dry_run"):
        report.stats["dry_run"] = True
    return report


def _flow_context(session: _Session, writer: Any, full_refresh: bool) -> dict[str, Any]:
    """What run_merge reads from dbt's context besides _dbt_context's, and the writer."""
    return {
        "invocation_args_dict": {},
        "local_md5": lambda text: hashlib.md5(str(text).encode()).hexdigest(),
        "make_temp_relation": lambda base, suffix: _Relation(
            "", "", "", q.quote(session.prefix + suffix.strip("_"))
        ),
        "load_cached_relation": lambda relation: None,
        "should_full_refresh": lambda: bool(full_refresh),
        "create_table_as": lambda temporary, relation, sql: (
            f"create {'temporary ' if temporary else ''}table {relation} as (\n{sql}\n)"
        ),
        "dbt_merge_writer": writer,
    }


class _History:
    """merge_history_table: checked when the merge starts (before anything is written),
    created on first use by a cursor of its own, and its row written on another cursor of its
    own, in a transaction begun after the table exists and committed right after the publish
    (a dbt model's transaction may have begun before the table was created, and would not see
    it). So the row exists exactly when the dataset was published."""

    def __init__(self, con, config, context, cfg, fail):
        self.con, self.config, self.context, self.cfg = con, config, context, cfg
        self.name = cfg["history_table"]
        macros = self._macros(con, fail)
        self.relation = macros.get("_history_relation")(self.name, context["this"])
        self.create_sql = macros.get("_create_history_sql")(self.relation)
        columns = [c for c, _ in macros.get("_history_columns")()]

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
            _Session(con, "").query,
            fail,
            context=self.context,
            error=ParquetMergeError,
            adapter_methods={"get_columns_in_relation": columns},
        )

    def ensure(self) -> None:
        merge_history.ensure_table(self.con, self.create_sql)

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


def _dbt_context(session: _Session, root: Path, history: dict[str, Any] | None, wanted: bool):
    """What the macros read from dbt's context: `this` (the dataset, in the connection's
    current database and schema, or the dbt model's), the model and the invocation (for the
    history row), api.Relation and api.Column."""
    info = history or {}
    database, schema = info.get("database") or "", info.get("schema") or ""
    if wanted and not (database and schema):
        database, schema = session.one("select current_database(), current_schema()")
    return {
        "this": _Relation(database, schema, str(root), q.quote(str(root))),
        "model": {
            "name": str(root),
            "unique_id": info.get("model_unique_id") or f"merge_parquet_dataset.{root}",
        },
        "invocation_id": info.get("invocation_id") or session.prefix.strip("_"),
        "api": SimpleNamespace(
            Relation=SimpleNamespace(
                create=lambda database=None, schema=None, identifier=None, type=None: _Relation(
                    database or "", schema or "", identifier or ""
                )
            ),
            Column=SimpleNamespace(create=lambda name, dtype: Column(name, dtype)),
        ),
    }


@dataclass
class _Options:
    compression: str
    rows_per_file: int
    row_group_size: int
    partition_by: list[str] | None


def _check_options(
    compression: str,
    rows_per_file: int,
    row_group_size: int,
    partition_by: str | Sequence[str] | None,
    fail,
) -> _Options:
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
                    "take letters, digits, '_' and '-'. Rename the column in the source (e.g. "
                    f"'{re.sub(r'[^A-Za-z0-9_-]+', '_', column)}'), or partition by another."
                )
    return _Options(codec, rows_per_file, row_group_size, columns)


def _api_wording(message: str) -> str:
    """The macros speak of a dbt model; the Python API has a source and a dataset: the doors'
    wording (render.source_wording: key_columns=, full_refresh=True, the source), then the
    dataset for the table."""
    return (
        source_wording(message, "the source")
        .replace("the target table", "the target dataset")
        .replace("The target was not changed.", "The dataset was not changed.")
    )


class _Session:
    """The DuckDB connection of one merge and the temporary objects it creates."""

    def __init__(self, con: duckdb.DuckDBPyConnection, tx_id: str):
        self.con = con
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


class _Merge:
    def __init__(self, session, macros, cfg, tx, root, options, fail, full_refresh, durable):
        self.s: _Session = session
        self.m: MacroContext = macros
        self.cfg = cfg
        self.tx: commit.Transaction = tx
        self.root: Path = root
        self.o: _Options = options
        self.fail = fail
        self.full_refresh = full_refresh
        self.durable = durable
        self.deferred = None  # the publish, run by run_merge (or its caller) with the history
        self.new_state: list[tuple[str, str]] = []  # defer: the dataset's files afterwards
        self.files: list[str] = []
        self.listed: dict[str, tuple[int, int, int]] = {}
        self.file_columns: dict[str, list[schema.FileColumn]] = {}  # each file's own columns

    # ------------------------------------------------------------------ the whole merge

    def run(self, source: Any) -> MergeReport:
        """The materialization's phases, on files: stage and plan (the macros), check the
        source (the macros), then build or merge."""
        stage = self._stage(self._source_relation(source))
        source_columns = self.s.describe(stage)
        # the dataset as this merge reads it; the publish refuses if another writer changed it
        self.listed = commit.listing(self.root)
        files = sorted(self.listed)
        self.files = files
        # what a deferred publish of no change leaves: the files as they are
        self.new_state = [(str(self.root / f), f) for f in files]
        self.deferred = lambda: None
        partitions = self._partition_columns(files, [c.name for c in source_columns])
        hive_types = self._hive_types(partitions, source_columns)
        build = self.full_refresh or not files
        hive = None
        if hive_types is not None and not build:
            values = {str(self.root / f): layout.partition_values(f, partitions) for f in files}
            hive = q.Hive(hive_types, values)
        target_columns = None if build else self._target_columns(files, hive)
        # on_schema_change: the macro plans the change (and refuses 'fail'); the files written
        # get the dataset's columns after it (see _merge)
        schema = None
        if target_columns is not None:
            # the soft-delete columns the source lacks are columns of the merged rows (live:
            # false, NULL): on_schema_change adds them to the dataset as it adds the source's
            extras = self.m.get("_soft_delete_extras")(self.cfg, [c.name for c in source_columns],
                                                       target_columns)
            schema = self.m.plan_schema_changes(
                self.cfg["on_schema_change"],
                _Relation("", "", str(self.root), q.quote(str(self.root))),
                source_columns + [e["column"] for e in extras],
                target_columns,
            )
            lowered = {p.lower() for p in partitions}
            for col in [*schema["removed"], *(r["column"] for r in schema["retyped"])]:
                if col.name.lower() in lowered:
                    self.fail(
                        f"on_schema_change='{self.cfg['on_schema_change']}' would remove or "
                        f"retype column '{col.name}', which is a partition column of the dataset "
                        "(its values are folder names). Keep the column as it is in the SELECT, "
                        "or rebuild the dataset with --full-refresh (full_refresh=True). The "
                        "target was not changed."
                    )
        relations = {
            # the target's name in messages, and the view of the files read (see _merge)
            "target": q.quote(self._free_name(str(self.root))),
            "stage": stage,
            "converted": q.quote(self.s.prefix + "converted"),
            "deduped": q.quote(self.s.prefix + "deduped")
            if self.cfg["actions"]["dedupe"]
            else None,
            "changes": q.quote(self.s.prefix + "changes"),
        }
        plan = self.m.build_merge_plan(self.cfg, relations, source_columns, schema)
        self.m.check_column_types(plan)
        if plan["stage"] != plan["raw_stage"]:
            # keys and values as the dataset stores them (converted_source_sql: try_cast;
            # check_source_rows refuses values that cannot be stored)
            self.s.con.execute(
                f"create temporary view {plan['stage']} as {self.m.converted_source_sql(plan)}"
            )
            self.s.created.append(("view", plan["stage"]))
        source = self._checked_source(plan)
        columns = plan["target_names"]
        if build:
            # as a reader of the files sees them afterwards, and every later merge reports
            # them: the files' columns, then the partition columns (folders), nesting order
            lowered = [p.lower() for p in partitions]
            columns = [c for c in columns if c.lower() not in lowered] + sorted(
                (c for c in columns if c.lower() in lowered), key=lambda c: lowered.index(c.lower())
            )
        report = MergeReport(
            stats={},
            root=str(self.root),
            columns=columns,
            partition_columns=partitions,
            hive_types=hive_types or {},
        )
        if build:
            # the rows a build loads (rebuild_rows_sql: without those delete_condition deletes)
            source = f"({self.m.rebuild_rows_sql(plan)}) as dbt_merge_rebuild"
        if build and self.cfg["dry_run"]:
            rows = self.s.one(f"select count(*) from {source}")[0]
            report.stats = {
                "inserted": rows,
                "updated": 0,
                "deleted": 0,
                "unchanged": 0,
                "total": rows,
                "dry_run": True,
            }
        elif build:
            self._build(plan, source, files, partitions, report)
        else:
            self._merge(plan, source, files, target_columns, partitions, hive, report)
        return report

    # ------------------------------------------------------------------ source

    def _source_relation(self, source: Any) -> str:
        paths = _as_paths(source)
        if paths is not None:
            if not paths:
                self.fail("source is an empty list of paths.")
            globs = [os.path.join(p, "**", "*.parquet") if os.path.isdir(p) else p for p in paths]
            listed = ", ".join(q.literal(g) for g in globs)
            return self.s.temp(
                "source", f"select * from read_parquet([{listed}], union_by_name = true)", "view"
            )
        return self.s.register("source", source)

    def _stage(self, raw: str) -> str:
        """The source once, as a table, as the files will store it (types.stored): every
        check, the matching and the write read the same rows, with the stored values."""
        stage = self.s.temp("stage", f"select * from {raw}")
        conversions = {}
        for col in self.s.describe(stage):
            how = types.stored(col.name, col.dtype)
            if isinstance(how, str):
                self.fail(how + " The target was not changed.")
            if how is not None:
                conversions[col.name] = how
        if not conversions:
            return stage
        for name, how in conversions.items():
            if how.check is None:
                continue
            c = q.quote(name)
            bad = self.s.query(
                f"select cast({c} as varchar) from {stage} where {how.check.format(c=c)} limit 1"
            )[1]
            if bad:
                self.fail(
                    f"column '{name}' {how.problem} (e.g. {bad[0][0]}). {how.fix} The target "
                    "was not changed."
                )
        replaced = ", ".join(
            f"{how.expression.format(c=q.quote(name))} as {q.quote(name)}"
            for name, how in conversions.items()
            if how.expression != "{c}"
        )
        if not replaced:
            return stage
        stored = self.s.temp("stored", f"select * replace ({replaced}) from {stage}")
        self.s.drop(stage)  # one copy of the source at a time
        return stored

    def _checked_source(self, plan) -> str:
        """Deduplicate (deduplicate strategy) and check the source: the macros' checks."""
        if plan["deduped"]:
            self.s.con.execute(
                f"create temporary table {plan['deduped']} as {self.m.dedupe_source_sql(plan)}"
            )
            self.s.created.append(("table", plan["deduped"]))
        if self.m.check_source_rows(plan) > 0:
            self.s.con.execute(f"drop table {plan['deduped']}")
            self.s.con.execute(
                f"create temporary table {plan['deduped']} as "
                f"{self.m.dedupe_source_sql(plan, one_per_key=True)}"
            )
        return plan["deduped"] or plan["stage"]

    # ------------------------------------------------------------------ the dataset

    def _partition_columns(self, files: list[str], source_names: list[str]) -> list[str]:
        existing = layout.partition_columns(files, str(self.root))
        wanted = self.o.partition_by
        if files and not self.full_refresh:
            if wanted is not None and [w.lower() for w in wanted] != [e.lower() for e in existing]:
                self.fail(
                    f"partition_by {wanted} differs from the dataset's partition folders "
                    f"{existing or '(none)'}. Leave partition_by out, or use full_refresh to "
                    "rewrite the dataset with the new partitioning."
                )
            return existing
        columns = wanted if wanted is not None else existing
        lowered = {n.lower(): n for n in source_names}
        for column in columns:
            if column.lower() not in lowered:
                self.fail(
                    f"partition column '{column}' is not in the source (columns: "
                    f"{', '.join(source_names)}). Fix partition_by."
                )
        return [lowered[c.lower()] for c in columns]

    def _hive_types(self, partitions: list[str], source_columns) -> dict[str, str] | None:
        """Partition columns are typed as the source's (folder names carry no type; q.hive_type)."""
        if not partitions:
            return None
        types = {c.name.lower(): c.dtype for c in source_columns}
        missing = [p for p in partitions if p.lower() not in types]
        if missing:
            self.fail(
                f"partition column '{missing[0]}' is not in the source. Add it to the source."
            )
        return {p: q.hive_type(types[p.lower()]) for p in partitions}

    def _paths(self, files: list[str]) -> list[str]:
        for f in [str(self.root), *files]:
            if any(ch in f for ch in paths.GLOB_CHARACTERS):
                self.fail(
                    f"'{f}' has a glob character (* ? [ {{) in its path, which DuckDB "
                    "would expand. Rename it."
                )
            if "\\" in f:
                self.fail(
                    f"'{f}' has a backslash in its path, which DuckDB's glob reads as an "
                    "escape: readers of the dataset would not find that file. Rename it."
                )
        return [str(self.root / f) for f in files]

    def _target_columns(self, files: list[str], hive: q.Hive | None) -> list[Column]:
        """The dataset's columns as every reader sees them (union_by_name over all files), and
        each file's own columns (self.file_columns). A file whose column does not widen into
        that schema exactly is refused."""
        paths = self._paths(files)
        columns = self.s.describe(q.read_files(paths, hive))
        file_list = "[" + ", ".join(q.literal(p) for p in paths) + "]"
        self.file_columns = schema.top_level_columns(
            self.s.query(
                "select file_name, name, type, num_children, duckdb_type"
                f" from parquet_schema({file_list}) order by file_name, column_id"
            )[1]
        )
        partition_lower = {n.lower() for n in (hive.types if hive else {})}
        unified = [(c.name, c.dtype) for c in columns if c.name.lower() not in partition_lower]
        found = schema.conflicts(self.file_columns, unified)
        if found:
            root = str(self.root) + os.sep
            name, dtype = found[0][0], found[0][1]
            files_typed = [f"{f[len(root) :]} ({t})" for n, _, f, t in found if n == name]
            shown = ", ".join(files_typed[:5]) + (" ..." if len(files_typed) > 5 else "")
            self.fail(
                f"the dataset's files disagree on the type of column '{name}': read together "
                f"they give {dtype}, which some files' values do not read back as exactly "
                f"({len(files_typed)} file(s): {shown}). Rewrite those files with one type, or "
                "rebuild the dataset from the SELECT with --full-refresh (full_refresh=True). "
                "The target was not changed."
            )
        return columns

    # ------------------------------------------------------------------ first run / full refresh

    def _build(self, plan, source: str, files: list[str], partitions: list[str], report) -> None:
        rows = self.s.one(f"select count(*) from {source}")[0]
        outputs = self._write_new_rows(
            f"select * from {source}", rows, plan["key_columns"], plan["source_names"], partitions
        )
        report.files_added = self._keep_a_file(outputs, 0, self.s.describe(source), partitions)
        report.files_removed = list(files)
        report.rows_written = rows
        self._publish(report)
        report.dataset_files = len(report.files_added)
        report.stats = {"inserted": rows, "updated": 0, "deleted": 0, "unchanged": 0, "total": rows}

    # ------------------------------------------------------------------ merge

    def _merge(self, plan, source, files, target_columns, partitions, hive, report) -> None:
        """Classify, count and check (the macros' action of each matched pair, their guards),
        then rewrite the files holding a changed row and write the new rows."""
        actions = plan["actions"]
        deletes = actions["target_only"] == "delete"
        schema_plan = plan["schema"]
        # sync_all_columns removing or retyping a column: every file is rewritten, or readers
        # (union_by_name over the files) would still see the old column or type
        rewrite_all = bool(schema_plan["removed"] or schema_plan["retyped"])
        target_names = [c.name for c in target_columns]
        out_columns = _planned_columns(target_columns, schema_plan)
        # the dataset's rows as the merge reads them: a column being added reads NULL (as after
        # ALTER TABLE ADD COLUMN), so conditions on it (soft deletes) bind
        read_columns = target_columns + [Column(c.name, c.dtype) for c in schema_plan["added"]]
        keys = [_find(k, target_names) or k for k in plan["key_columns"]]
        taken = [*target_names, *plan["source_names"]]
        file_col = q.fresh_name("dbt_merge_file", taken)
        action_col = q.fresh_name("dbt_merge_action", taken)
        paths = self._paths(files)

        file_list = "[" + ", ".join(q.literal(p) for p in paths) + "]"
        target_rows = int(
            self.s.one(
                f"select coalesce(sum(num_rows), 0) from parquet_file_metadata({file_list})"
            )[0]
        )
        if deletes or rewrite_all:
            candidates = paths  # every row the source lacks is deleted: every file is read
        else:
            candidates = self._candidate_files(
                plan, source, paths, file_list, target_columns, partitions, hive, file_col
            )
        report.files_scanned = len(candidates)

        # the files read, named as the plan's target (the dataset's path): the macros' checks
        # query it and name it in their messages
        target = plan["target"]
        read = (
            q.read_files(candidates, hive, file_col, read_columns)
            if candidates
            else q.empty_relation(read_columns, file_col)
        )
        self.s.con.execute(f"create temporary view {target} as select * from {read}")
        self.s.created.append(("view", target))
        key_match = self.m.key_match(plan["key_columns"], SRC, DST, plan["compare"])
        # the macros' semantics: which target rows the merge considers (key not NULL, inside
        # incremental_predicates), the action of a matched pair (U, N, H, C, K), soft deletes
        considered = self.m.get("_target_rows_condition")(plan, False)
        live = self.m.get("_live")(plan) if plan["soft_delete"] else None
        unmatched = None
        if deletes:
            unmatched = f"case when {live} then 'D' else 'X' end" if live else "'D'"
        matched = self.s.temp(
            "matched",
            q.matched_rows_sql(
                target,
                source,
                plan["key_columns"],
                key_match,
                self.m.get("_matched_action_sql")(plan),
                unmatched,
                considered,
                file_col,
                action_col,
            ),
        )
        counts = dict.fromkeys("UNHCKDX", 0)
        for action, n in self.s.query(
            f"select {q.quote(action_col)}, count(*) from {matched} group by 1"
        )[1]:
            counts[action] = int(n)
        # keys told apart byte for byte, as everywhere (compared_value)
        key_list = self.m.compared_list(plan["compare"], plan["key_columns"])
        listed = ", ".join(q.literal(a) for a in q.MATCHED)
        matched_keys = self.s.one(
            f"select count(*) from (select distinct {key_list} from {matched}"
            f" where {q.quote(action_col)} in ({listed}))"
        )[0]
        delete_flag = self.m.get("_delete_flag")(plan) if plan["delete_condition"] else None
        kept_source = f"not {delete_flag}" if delete_flag else None
        inserts = actions["source_only"] == "insert"
        # the statistics as the macros count them: count_matched_keys' row (U, N, H, C, K,
        # matched keys, source rows, target rows[, considered[, unmatched]]) read from the
        # matched rows and the files' metadata, turned into counts by _matched_key_counts
        row = [counts[a] for a in q.MATCHED]
        row += [matched_keys, self._count(source, SRC, kept_source) if inserts else 0]
        row.append(target_rows)
        if deletes:
            row.append(self._count(target, DST, " and ".join(filter(None, [considered, live]))))
            if live:
                row.append(counts["D"])  # the live considered rows no source row matched
        stats = self.m.get("_matched_key_counts")(plan, row)
        inserted = stats["inserted"]
        # the materialization's guards: a key the dataset holds twice, keys outside the
        # incremental_predicates, full_merge's max_delete_fraction
        self.m.check_merge_counts(plan, stats)
        report.stats = {k: stats[k] for k in (*STAT_NAMES, "held_back") if k in stats}
        if self.cfg["dry_run"]:
            report.stats["dry_run"] = True
            report.dataset_files = len(files)
            return

        affected = paths if rewrite_all else []
        if not rewrite_all and (counts["U"] or counts["D"] or counts["C"]):
            affected = [
                r[0]
                for r in self.s.query(
                    f"select distinct {q.quote(file_col)} from {matched}"
                    f" where {q.quote(action_col)} in {q.REWRITES} order by 1"
                )[1]
            ]
        if not affected and not inserted and not schema_plan["added"]:
            report.dataset_files = len(files)
            return
        source_map = {}
        for col in out_columns:
            found = _find(col.name, plan["source_names"])
            if found is not None:
                source_map[col.name.lower()] = found
        soft = plan["soft_delete"]
        images = q.Images(
            out_columns,
            source_map,
            plan["update_columns"],
            keys,
            partitions,
            action_col,
            deletes,
            read_columns=read_columns,
            dest_values=_dest_values(schema_plan),
            considered=considered,
            live=live,
            soft_delete=(_find(soft["column"], [c.name for c in out_columns]) if soft else None),
            soft_delete_timestamp=(
                _find(soft["timestamp_column"], [c.name for c in out_columns])
                if soft and soft["timestamp_column"]
                else None
            ),
            now=self._now() if soft and soft["timestamp_column"] else None,
            compared=self._compared(plan),
        )
        m_alias = "dbt_merge_matched"
        matched_match = self.m.key_match(plan["key_columns"], m_alias, SRC, plan["compare"])
        matched_source = None
        if affected:
            matched_source = self.s.temp(
                "matched_source",
                q.matched_source_sql(
                    matched, source, file_col, action_col, matched_match, every_file=rewrite_all
                ),
            )
        outputs = self._rewrite_files(affected, images, matched_source, hive, file_col, key_match)
        affected_view = None
        if affected and images.moved():
            affected_view = self.s.temp(
                "affected",
                "select * from " + q.read_files(affected, hive, columns=read_columns),
                "view",
            )
        new_rows = q.new_rows_sql(
            images,
            source,
            matched,
            matched_match,
            inserts and inserted > 0,
            affected_view,
            matched_source,
            key_match,
            kept_source,
        )
        if new_rows is not None:
            bound = inserted + (stats["updated"] + stats["deleted"] if images.moved() else 0)
            outputs += self._write_new_rows(
                new_rows, bound, keys, [c.name for c in out_columns], partitions
            )
        root = str(self.root) + os.sep
        report.files_removed = [p[len(root) :].replace(os.sep, "/") for p in affected]
        # a column added by on_schema_change is in the dataset's schema even when no row was
        # written: an empty file then carries it
        carries = any(rows for _, rows in outputs) or not schema_plan["added"]
        report.files_added = self._keep_a_file(
            outputs, len(files) - len(affected) if carries else 0, out_columns, partitions
        )
        report.rows_written = sum(n for _, n in outputs)
        self._publish(report)
        report.dataset_files = len(files) - len(report.files_removed) + len(report.files_added)

    def _compared(self, plan):
        """compared_value of the plan, as a function (column, SQL expression) -> SQL: keys and
        values judged byte for byte, whatever collation DuckDB would compare them by (the
        connection's default_collation, a source column's COLLATE), also against the Parquet
        statistics, which are in byte order."""
        compare, macro = plan["compare"], self.m.get("compared_value")
        return lambda column, expr: macro(compare, column, expr)

    def _free_name(self, base: str) -> str:
        """`base`, or `base (2)`, ...: a name no table or view of the connection has (the
        caller's objects are the caller's, even one named as the dataset's folder)."""
        rows = self.s.query(
            "select lower(table_name) from duckdb_tables()"
            " union all select lower(view_name) from duckdb_views()"
        )[1]
        taken = {r[0] for r in rows}
        name, n = base, 1
        while name.lower() in taken:
            n += 1
            name = f"{base} ({n})"
        return name

    def _now(self) -> str:
        """The merge's time, once: what a table's merge stamps (current_timestamp of its one
        transaction, as a TIMESTAMP in the session's time zone), for every file it rewrites."""
        now = self.s.one(
            "select strftime(cast(current_timestamp as timestamp), '%Y-%m-%d %H:%M:%S.%f')"
        )
        return f"cast({q.literal(now[0])} as timestamp)"

    def _count(self, relation: str, alias: str, where: str | None) -> int:
        return self.s.one(
            f"select count(*) from {relation} as {alias}" + (f" where {where}" if where else "")
        )[0]

    def _candidate_files(
        self, plan, source, paths, file_list, target_columns, partitions, hive, file_col
    ) -> list[str]:
        """The files that may hold a source key: by row group statistics and partition values.
        Conservative: a file without usable statistics is a candidate."""
        types = {c.name.lower(): c.dtype for c in target_columns}
        partition_lower = {p.lower() for p in partitions}
        part_keys = [k for k in plan["key_columns"] if k.lower() in partition_lower]
        range_keys = [
            Column(k, types[k.lower()])
            for k in plan["key_columns"]
            if k.lower() not in partition_lower and q.is_prunable(types[k.lower()])
        ]
        if not range_keys and not part_keys:
            return list(paths)
        taken = [*types, *plan["source_names"], file_col]
        lo = [q.fresh_name(f"dbt_merge_lo_{i}", taken) for i in range(len(range_keys))]
        hi = [q.fresh_name(f"dbt_merge_hi_{i}", taken) for i in range(len(range_keys))]
        # one row per (file, row group, column); only the key columns' rows carry ranges
        metadata = f"(select * from parquet_metadata({file_list}))"
        if range_keys:
            # each key's statistics are those of the file's own top-level column of that name
            leaves = []
            for path in paths:
                for index, key in enumerate(range_keys):
                    found = schema.find(self.file_columns.get(path, []), key.name)
                    if found is False:
                        return list(paths)  # which column DuckDB reads is not certain
                    if found is not None and found.leaf is not None:
                        leaves.append((path, found.leaf, index))
            if not leaves:
                return []  # no file holds a key column: every dataset key is NULL
            metadata = q.key_leaves_sql(file_list, leaves)
        ranges_sql = q.row_group_ranges_sql(metadata, range_keys, file_col, lo, hi)
        if part_keys:
            # the partition values of each file, from its folders, as one more "range" per key
            names = [n.lower() for n in hive.types]
            types_by_name = {n.lower(): t for n, t in hive.types.items()}
            rows = []
            for path in paths:
                values = [q.literal(path)]
                for key in part_keys:
                    value = hive.values[path][names.index(key.lower())]
                    text = "null" if value is None else q.literal(value)
                    values.append(f"cast({text} as {types_by_name[key.lower()]})")
                rows.append(f"({', '.join(values)})")
            part_list = ", ".join(q.quote(p) for p in part_keys)
            ranges_sql = (
                f"select dbt_merge_rg.*, {part_list} from ({ranges_sql}) as dbt_merge_rg join"
                f" (values {', '.join(rows)}) as dbt_merge_pv({q.quote(file_col)}, {part_list})"
                f" using ({q.quote(file_col)})"
            )
        ranges = self.s.temp("ranges", ranges_sql)
        found = self.s.query(
            q.candidate_files_sql(
                ranges,
                source,
                file_col,
                [k.name for k in range_keys],
                lo,
                hi,
                part_keys,
                self._compared(plan),
            )
        )[1]
        hits = {r[0] for r in found}
        return [p for p in paths if p in hits]

    # ------------------------------------------------------------------ write and publish

    def _rewrite_files(
        self, affected, images, matched_source, hive, file_col, key_match
    ) -> list[tuple[str, int]]:
        """Each file holding an updated or deleted row, rewritten as one new file in the same
        folder (the same keys, sorted, minus deleted and moved rows): [(relative path, rows)]."""
        outputs = []
        root = str(self.root) + os.sep
        for file in affected:
            rel = file[len(root) :].replace(os.sep, "/")
            final = _sibling(rel, layout.new_file_name(self.tx.id, self._next_number()))
            target = self.tx.new_files / final
            target.parent.mkdir(parents=True, exist_ok=True)
            query = q.rewrite_file_sql(file, images, matched_source, hive, file_col, key_match)
            written = self.s.one(
                q.copy_file_sql(query, str(target), self.o.compression, self.o.row_group_size)
            )[0]
            outputs.append((final, int(written)))
        commit.checkpoint("written")
        return outputs

    def _write_new_rows(
        self, query: str, bound: int, keys, names, partitions
    ) -> list[tuple[str, int]]:
        """Write the rows of `query` (at most `bound` of them) to new files, sorted by the key:
        one file, or per partition folder, `rows_per_file` rows at most each."""
        out = self.tx.folder / "copy"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        chunked = bound > self.o.rows_per_file
        chunk_col = q.fresh_name("dbt_merge_chunk", names) if chunked else None
        pattern = f"dbt_merge-{self.tx.id}-{{i}}"
        destination = out if (partitions or chunked) else out / "single.parquet"
        self.s.con.execute(
            q.copy_sql(
                query,
                str(destination),
                keys,
                self.o.compression,
                min(self.o.row_group_size, self.o.rows_per_file),
                partitions,
                chunk_col,
                self.o.rows_per_file,
                pattern,
            )
        )
        outputs = []
        for rel in commit.list_files(out):
            directory = layout.parent(rel)
            if chunk_col:  # drop the chunk folder: .../dbt_merge_chunk=3/x.parquet -> .../
                directory = layout.parent(directory)
            final = _in_folder(directory, layout.new_file_name(self.tx.id, self._next_number()))
            target = self.tx.new_files / final
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(out / rel, target)
            rows = self.s.one(f"select count(*) from read_parquet({q.literal(str(target))})")[0]
            outputs.append((final, int(rows)))
        commit.checkpoint("written")
        return outputs

    def _keep_a_file(
        self, outputs, files_left: int, columns: list[Column], partitions
    ) -> list[str]:
        """The new files worth adding: those holding rows; but when the dataset would be left
        with no file at all, one empty file keeps its schema (in a partitioned dataset, in the
        NULL partition's folder), because readers of `**/*.parquet` fail on no file."""
        kept = [path for path, rows in outputs if rows > 0]
        for path, rows in outputs:
            if rows == 0:
                (self.tx.new_files / path).unlink()
        if files_left or kept:
            return kept
        folder = "/".join(f"{p}=__HIVE_DEFAULT_PARTITION__" for p in partitions)
        final = _in_folder(folder, layout.new_file_name(self.tx.id, self._next_number()))
        target = self.tx.new_files / final
        target.parent.mkdir(parents=True, exist_ok=True)
        lowered = {p.lower() for p in partitions}
        values = ", ".join(
            f"cast(null as {c.dtype}) as {q.quote(c.name)}"
            for c in columns
            if c.name.lower() not in lowered
        )
        self.s.con.execute(
            f"copy (select {values} limit 0) to {q.literal(str(target))}"
            f" (format parquet, compression {self.o.compression})"
        )
        return [final]

    def _next_number(self) -> int:
        self._files_written = getattr(self, "_files_written", 0) + 1
        return self._files_written - 1

    def _publish(self, report: MergeReport) -> None:
        """Plan the publish of `report` (self.deferred) and the dataset as it will leave it
        (self.new_state); run_merge runs it, with the history row, or hands it to its caller."""

        def publish() -> None:
            plan = layout.plan_swap(
                report.files_removed,
                report.files_added,
                lambda d: (self.root / d).is_dir() if d else self.root.is_dir(),
            )
            try:
                commit.publish(self.tx, plan, durable=self.durable, listed=self.listed)
            except ParquetMergeError as e:
                self.fail(str(e))

        removed = set(report.files_removed)
        self.new_state = [(str(self.root / f), f) for f in self.files if f not in removed]
        self.new_state += [(str(self.tx.new_files / f), f) for f in report.files_added]
        self.deferred = publish


@contextlib.contextmanager
def dataset_files(target_path: str | os.PathLike) -> Iterator[list[str]]:
    """The dataset's Parquet files (absolute paths, sorted), with no merge of the package
    publishing into it until the block ends: read them inside the block, and the read is the
    dataset as one merge left it, never part of one state and part of another. A glob of
    `target_path/**/*.parquet` taken while a merge publishes may not be (DuckDB skips a listed
    file that is gone when it looks at it; see docs/parquet-datasets.md, Readers). A merge
    waits to publish until such blocks end. `target_path` is resolved as the merge resolves it
    (`~`, symlinks, `..`). A file whose path has a glob character or a backslash (another
    tool's `a[1].parquet`) is refused: DuckDB expands every path of a list it reads, so a read
    of the list would read another file in its place."""
    root = Path(os.path.realpath(os.path.expanduser(os.fspath(target_path))))
    with commit.dataset_files(root) as files:
        for f in files:
            odd = sorted({ch for ch in f if ch in paths.GLOB_CHARACTERS + "\\"})
            if odd:
                raise ParquetMergeError(
                    f"dbt_merge: dataset '{target_path}': the file '{f}' has {' '.join(odd)} "
                    "in its path, which DuckDB reads as a glob (or a backslash as an escape) in "
                    "every path of a list it reads: a read of the dataset's files would read "
                    "another file in its place, or none. Rename it without * ? [ { \\. "
                    "Nothing was read."
                )
        yield files


def read_dataset(
    target_path: str | os.PathLike,
    *,
    connection: duckdb.DuckDBPyConnection | None = None,
    hive_types: dict[str, str] | None = None,
):
    """The dataset's rows as a PyArrow table, read inside dataset_files (one state of the
    dataset, whatever merges publish meanwhile), union_by_name over its files. Partition
    columns come from the folders below `target_path` only (a `k=v` folder above it is no
    column), typed by `hive_types` ({column: DuckDB type}; VARCHAR otherwise: folder names
    carry no type). `connection`: the DuckDB connection to read with (default: a private
    one). A folder without Parquet files is refused."""
    con = connection or duckdb.connect()
    try:
        with dataset_files(target_path) as files:
            if not files:
                raise ParquetMergeError(
                    f"dbt_merge: dataset '{target_path}': it holds no Parquet file to read."
                )
            root = os.path.realpath(os.path.expanduser(os.fspath(target_path)))
            rels = [os.path.relpath(f, root).replace(os.sep, "/") for f in files]
            partitions = layout.partition_columns(rels, root)
            hive = None
            if partitions:
                wanted = {k.lower(): v for k, v in (hive_types or {}).items()}
                types = {p: wanted.get(p.lower(), "VARCHAR") for p in partitions}
                values = {
                    f: layout.partition_values(r, partitions)
                    for f, r in zip(files, rels, strict=True)
                }
                hive = q.Hive(types, values)
            return con.sql(f"select * from {q.read_files(files, hive)}").to_arrow_table()
    finally:
        if connection is None:
            con.close()


def _sibling(path: str, name: str) -> str:
    """`name` in the folder of `path`, a relative path ("x" is in the root)."""
    return _in_folder(layout.parent(path), name)


def _in_folder(directory: str, name: str) -> str:
    """`name` in a relative folder ("" is the root)."""
    return f"{directory}/{name}" if directory else name


def _planned_columns(target_columns: list[Column], schema_plan) -> list[Column]:
    """The dataset's columns after the planned schema change (plan_schema_changes)."""
    removed = {c.name.lower() for c in schema_plan["removed"]}
    retyped = {r["column"].name.lower(): r["new_type"] for r in schema_plan["retyped"]}
    columns = [
        Column(c.name, retyped.get(c.name.lower(), c.dtype))
        for c in target_columns
        if c.name.lower() not in removed
    ]
    return columns + [Column(c.name, c.dtype) for c in schema_plan["added"]]


def _dest_values(schema_plan) -> dict[str, str]:
    """A dataset row's value of a column as the planned schema change leaves it (the SQL of
    the macros' _dest_value): NULL in an added column, converted in a retyped one."""
    values = {c.name.lower(): f"cast(null as {c.dtype})" for c in schema_plan["added"]}
    for r in schema_plan["retyped"]:
        values[r["column"].name.lower()] = (
            f"cast({DST}.{q.quote(r['column'].name)} as {r['new_type']})"
        )
    return values


def _find(name: str, names: Sequence[str]) -> str | None:
    for candidate in names:
        if candidate.lower() == name.lower():
            return candidate
    return None


def _as_paths(source: Any) -> list[str] | None:
    if isinstance(source, str | os.PathLike):
        return [os.fspath(source)]
    if isinstance(source, list | tuple) and all(isinstance(s, str | os.PathLike) for s in source):
        return [os.fspath(s) for s in source]
    return None
