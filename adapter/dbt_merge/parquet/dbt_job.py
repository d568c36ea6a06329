"""The Python half of a `merge` model whose target is a Parquet dataset (config `location`).

The materialization (macros/parquet/) hands the model over as a dbt-duckdb Python job
(parquet_dataset_job renders its code): dbt-duckdb runs its `model(dbt, session)` in this
process, on the model's own DuckDB connection and transaction, and that calls `run_job`,
which merges the model's SELECT
into the dataset with `merge_with_report` (the same plan and checks as every merge: the package's
macros) and leaves its outcome in a temporary table of that connection, for the
materialization to read: the statistics, or the error to raise.

The merge is written but not published: the materialization publishes it last, after the
model's view and its post-hooks, by calling a SQL function this job registers (so a failing
post-hook leaves the dataset as it was, as a table's merge is rolled back). A
merge_history_table is checked and created here (merge_with_report), and its row written by the
materialization in the model's transaction before the publish, committed after it.
"""

from __future__ import annotations

import atexit
import itertools
import os
import threading
from pathlib import Path
from typing import Any

import duckdb

from dbt_merge import version
from dbt_merge.parquet import commit, layout, paths
from dbt_merge.parquet import sql as q
from dbt_merge.parquet.api import merge_with_report
from dbt_merge.parquet.errors import ParquetMergeError
from dbt_merge.parquet.session import MergeReport, Pending

#: The job's result, one row of a temporary table the materialization reads by column name
#: (parquet_dataset_start, parquet_dataset_finish): the refusal (or NULL); the statistics;
#: read_sql, the dataset as the merge leaves it (its new files still in the work folder);
#: skipped (--empty / --sample); final_sql, the dataset once published; publish, the SQL function
#: that publishes it; dry_run.
RESULT_COLUMNS = {
    "error": "varchar", "inserted": "bigint", "updated": "bigint", "deleted": "bigint",
    "unchanged": "bigint", "total": "bigint", "held_back": "bigint", "versions": "bigint",
    "read_sql": "varchar",
    "skipped": "varchar", "final_sql": "varchar", "publish": "varchar", "dry_run": "boolean",
}
#: The model's config options the job passes on to merge_with_report as they are
#: (dbt_merge.options).
PASSED = (
    "dedup_order_by",
    "merge_update_columns",
    "merge_exclude_columns",
    "merge_check_columns",
    "detect_unchanged",
    "max_delete_fraction",
    "incremental_predicates",
    "on_key_outside_predicates",
    "on_schema_change",
    "merge_update_condition",
    "delete_condition",
    "soft_delete_column",
    "soft_delete_timestamp_column",
    "dry_run",
    "merge_history_table",
    "full_merge_write",
    "partition_by",
    "updated_at",
    "hard_deletes",
    "check_cols",
    "late_rows",
    "dbt_valid_to_current",
    "snapshot_meta_column_names",
)

# Merges written but not yet published, by result table name: (dbt invocation, dataset root,
# the pending publish). The materialization publishes after the model's view and its
# post-hooks (parquet_dataset_finish), by calling a SQL function this job registers on the
# model's connection. A model that fails before that leaves its entry here, holding the
# dataset's lock: the next job of another dbt invocation (or of the same dataset) aborts it,
# and so does the end of the process.
_PENDING: dict[str, tuple[str, str, Pending]] = {}
_PENDING_LOCK = threading.Lock()
_NUMBERS = itertools.count()


def check_job(connection: Any, args: dict[str, Any]) -> None:
    """Before the model's pre-hooks: refuse the model as run_job would before merging (another
    release of the dbt package, a location merge_with_report refuses, another model's folder,
    another table format's): the refusal, or NULL, in the temporary table args['result']. run_job
    checks again (the pre-hooks run in between)."""
    con = _cursor(connection)
    error = version.mismatch(args.get("dbt_package_version"))
    if error is None:
        try:
            _checked_location(args)
        except ParquetMergeError as e:
            error = str(e)
        except duckdb.Error as e:
            error = f"{type(e).__name__}: {e}"
    _write_result(con, args["result"], error=error)


def _cursor(connection: Any) -> Any:
    """The DuckDB connection under dbt-duckdb's wrappers, ready for a relation read."""
    con = getattr(connection, "_cursor", connection)  # dbt-duckdb wraps its cursor
    con = getattr(con, "_cursor", con)
    if hasattr(con, "complete"):
        # a pre-hook's result nobody fetched (`select 1`): DuckDB 2.0 refuses every relation
        # read on the connection until it is run to its end
        con.complete()
    return con


def run_job(connection: Any, args: dict[str, Any]) -> None:
    """Merge the model's SELECT (args['sql']) into args['location'] on the model's connection;
    write the outcome to the temporary table args['result']."""
    con = _cursor(connection)
    mismatch = version.mismatch(args.get("dbt_package_version"))
    if mismatch:  # the dbt package that sent this job is another release: refused first
        _write_result(con, args["result"], error=mismatch)
        return
    _abandon(args.get("invocation_id") or "", args["location"])
    try:
        root = _checked_location(args)
        if args.get("skipped"):
            # --empty / --sample: the dataset is left as it is; the view reads it as it is
            read_sql = _dataset_view_sql(con, root, args["sql"])
            _write_result(con, args["result"], read_sql=read_sql, skipped=args["skipped"])
            return
    except ParquetMergeError as e:
        _write_result(con, args["result"], error=str(e))
        return
    except duckdb.Error as e:
        _write_result(con, args["result"], error=f"{type(e).__name__}: {e}")
        return
    try:
        options = {k: args[k] for k in PASSED if args.get(k) is not None}
        report = merge_with_report(
            con.sql(args["sql"]),
            args["location"],
            args["unique_key"],
            strategy=args.get("strategy") or "upsert",
            compression=args.get("compression") or "zstd",
            connection=con,
            rows_per_file=args.get("rows_per_file") or 1_000_000,
            full_refresh=bool(args.get("full_refresh")),
            error_prefix="",
            defer_publish=True,
            history=args.get("history"),
            **options,
        )
        s = report.stats
        result = {k: s.get(k) for k in ("inserted", "updated", "deleted", "unchanged", "total",
                                        "held_back", "versions")}
        if s.get("dry_run"):
            # nothing written: the model's view is left as it is
            report.pending.abort()
            result["dry_run"] = True
        else:
            result.update(
                read_sql=_new_state_sql(report),
                final_sql=q.read_dataset(report.root, report.hive_types or None, report.columns),
                publish=_register(con, args, report),
                dry_run=False,
            )
    except ParquetMergeError as e:
        result = {"error": str(e)}
    except duckdb.Error as e:
        result = {"error": f"{type(e).__name__}: {e}"}
    _write_result(con, args["result"], **result)


def _checked_location(args: dict[str, Any]) -> Path:
    """The dataset's folder (as merge_with_report resolves it; refused there: a path readers cannot
    glob, a file, another table format's table), refused when another `location` model's
    folder is it, holds it or lies in it, or when this process sees Parquet files in it and the
    macros' look did not (or the reverse): is_incremental() shaped the SELECT by that look."""

    def fail(message: str) -> None:
        raise ParquetMergeError(message)

    root = paths.resolve(args["location"], fail)
    others = [(o["model"], o["location"]) for o in args.get("other_locations") or []]
    clash = paths.same_or_nested(root, others)
    if clash is not None:
        name, other, how = clash
        where = {
            "is": f"location '{root}' is also the location of model '{name}'",
            "holds": f"location '{root}' lies inside the location of model '{name}' ({other})",
            "is inside": f"location '{root}' holds the location of model '{name}' ({other})",
        }[how]
        fail(
            f"{where}: one model's merges would read the other's files as rows of its own, and "
            "rewrite or delete them (an upsert overwrites them, a full_merge deletes them). "
            "Give each model a folder of its own, neither inside the other. The target was not "
            "changed."
        )
    files = commit.list_files(root)
    if bool(files) != bool(args.get("has_files")):
        fail(
            f"DuckDB and the file system disagree on whether '{root}' holds Parquet files: "
            f"DuckDB's glob of '<location>/**/*.parquet' (which is_incremental() reads) found "
            f"{'some' if args.get('has_files') else 'none'}, the folder holds {len(files)}. The "
            "model's SELECT may have been shaped for the other answer, so nothing was merged. "
            "Usual causes: a symlinked folder inside the dataset (DuckDB's glob follows it), "
            "DuckDB's file_search_path for a relative location. Name the folder by its full "
            "path, without symlinks inside it. The target was not changed."
        )
    return root


def _dataset_view_sql(con: Any, root: Path, sql: str) -> str:
    """The model's view over the dataset as it is (the --empty / --sample skip), shaped as a
    merge leaves it (read_dataset): exactly the dataset's columns, so no `k=v` folder above it
    is one, and its partition columns typed as the SELECT types them (folder names carry no
    type: '7' of a VARCHAR column would be read as a number)."""
    files = commit.list_files(root)
    partitions = layout.partition_columns(files, str(root))
    relation = con.sql(sql)
    named = zip(relation.columns, relation.types, strict=True)
    select_types = {name.lower(): str(dtype) for name, dtype in named}
    hive_types = {p: q.hive_type(select_types.get(p.lower(), "VARCHAR")) for p in partitions}
    hive = None
    if partitions:
        values = {str(root / f): layout.partition_values(f, partitions) for f in files}
        hive = q.Hive(hive_types, values)
    read = q.read_files([str(root / f) for f in files], hive)
    columns = [r[0] for r in con.execute(f"describe select * from {read}").fetchall()]
    return q.read_dataset(str(root), hive_types or None, columns)


def _new_state_sql(report: MergeReport) -> str:
    """A relation over the dataset as the merge leaves it, before it is published: the files
    that stay and the new ones, still in the work folder (the model's view reads this until
    the publish, so its post-hooks see the merged rows, as a table's would)."""
    assert report.pending is not None
    files = report.pending.files
    hive = None
    if report.hive_types:
        names = list(report.hive_types)
        values = {path: layout.partition_values(rel, names) for path, rel in files}
        hive = q.Hive(report.hive_types, values)
    listed = ", ".join(q.quote(c) for c in report.columns)
    return f"(select {listed} from {q.read_files([p for p, _ in files], hive)})"


def _register(con: Any, args: dict[str, Any], report: MergeReport) -> str:
    """Keep the pending publish and register the SQL function that runs it: its name."""
    assert report.pending is not None
    # SQL functions live in the database's catalog, across its connections: one name per merge
    name = f"{args['result']}_publish_{next(_NUMBERS)}"
    with _PENDING_LOCK:
        _PENDING[args["result"]] = (args.get("invocation_id") or "", report.root, report.pending)

    def publish() -> str:
        with _PENDING_LOCK:
            entry = _PENDING.pop(args["result"], None)
        if entry is None or entry[2] is not report.pending:
            raise ParquetMergeError(
                f"the merge into {report.root} was abandoned before it was published (another "
                "run of the model, or of the same dataset, started meanwhile). The dataset was "
                "not changed by this run; running it again is safe."
            )
        report.pending.publish()
        return "published"

    con.create_function(name, publish, [], duckdb.sqltype("VARCHAR"), side_effects=True)
    return q.quote(name)


def _abandon(invocation: str, location: str) -> None:
    """Abort the pending publishes a failed model left: those of another dbt invocation, and
    any of this dataset."""
    root = _root(location)
    with _PENDING_LOCK:
        stale = [
            key
            for key, (inv, pending_root, _) in _PENDING.items()
            if inv != invocation or pending_root == root
        ]
        entries = [_PENDING.pop(key) for key in stale]
    for _, _, pending in entries:
        pending.abort()


def _root(location: str) -> str:
    return os.path.realpath(os.path.expanduser(os.fspath(location)))  # as merge_with_report has it


@atexit.register
def _abort_all() -> None:
    with _PENDING_LOCK:
        entries = list(_PENDING.values())
        _PENDING.clear()
    for _, _, pending in entries:
        pending.abort()


def _write_result(con: Any, name: str, **fields: Any) -> None:
    """The job's result (RESULT_COLUMNS; a field not given is NULL) as the temporary table
    `name`."""
    unknown = set(fields) - set(RESULT_COLUMNS)
    if unknown:
        raise ValueError(f"not a result column: {sorted(unknown)}")
    result = q.quote(name)
    columns = ", ".join(f"{c} {t}" for c, t in RESULT_COLUMNS.items())
    con.execute(f"create or replace temporary table {result} ({columns})")
    marks = ", ".join("?" for _ in RESULT_COLUMNS)
    con.execute(f"insert into {result} values ({marks})",
                [fields.get(c) for c in RESULT_COLUMNS])
