"""The Python half of a `merge` model whose target is a Parquet dataset (config `location`).

The materialization (macros/parquet/) hands the model over as a dbt-duckdb Python job
(parquet_dataset_job renders its code): dbt-duckdb runs its `model(dbt, session)` in this
process, on the model's own DuckDB connection and transaction, and that calls `run_job`,
which merges the model's SELECT
into the dataset with `run_merge` (the same plan and checks as every merge: the package's
macros) and leaves its outcome in a temporary table of that connection, for the
materialization to read: the statistics, or the error to raise.
"""

from __future__ import annotations

from typing import Any

import duckdb

from dbt_merge.parquet import sql as q
from dbt_merge.parquet.api import dataset_read_sql, run_merge
from dbt_merge.parquet.errors import ParquetMergeError

RESULT_COLUMNS = (
    "error varchar, inserted bigint, updated bigint, deleted bigint, unchanged bigint,"
    " total bigint, read_sql varchar, skipped varchar"
)


def run_job(connection: Any, args: dict[str, Any]) -> None:
    """Merge the model's SELECT (args['sql']) into args['location'] on the model's connection;
    write the outcome to the temporary table args['result']."""
    con = getattr(connection, "_cursor", connection)  # dbt-duckdb wraps its cursor
    con = getattr(con, "_cursor", con)
    row: tuple
    if args.get("skipped"):
        # --empty / --sample: the dataset is left as it is; the view reads it as it is
        read_sql = dataset_read_sql(args["location"])
        row = (None, None, None, None, None, None, read_sql, args["skipped"])
        _write_result(con, args["result"], row)
        return
    try:
        report = run_merge(
            con.sql(args["sql"]),
            args["location"],
            args["unique_key"],
            strategy=args.get("strategy") or "upsert",
            dedup_order_by=args.get("dedup_order_by"),
            compression=args.get("compression") or "zstd",
            connection=con,
            partition_by=args.get("partition_by"),
            rows_per_file=args.get("rows_per_file") or 1_000_000,
            merge_update_columns=args.get("merge_update_columns"),
            merge_exclude_columns=args.get("merge_exclude_columns"),
            merge_check_columns=args.get("merge_check_columns"),
            detect_unchanged=_default(args.get("detect_unchanged"), True),
            max_delete_fraction=_default(args.get("max_delete_fraction"), 0.5),
            full_refresh=bool(args.get("full_refresh")),
            error_prefix="",
        )
        s = report.stats
        read_sql = q.read_dataset(report.root, report.hive_types or None, report.columns)
        counts = (s["inserted"], s["updated"], s["deleted"], s["unchanged"], s["total"])
        row = (None, *counts, read_sql, None)
    except ParquetMergeError as e:
        row = (str(e), None, None, None, None, None, None, None)
    except duckdb.Error as e:
        row = (f"{type(e).__name__}: {e}", None, None, None, None, None, None, None)
    _write_result(con, args["result"], row)


def _write_result(con: Any, name: str, row: tuple) -> None:
    result = q.quote(name)
    con.execute(f"create or replace temporary table {result} ({RESULT_COLUMNS})")
    con.execute(f"insert into {result} values (?, ?, ?, ?, ?, ?, ?, ?)", list(row))


def _default(value: Any, default: Any) -> Any:
    return default if value is None else value
