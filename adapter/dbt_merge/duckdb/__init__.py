"""Merge into a DuckDB table from Python, on the caller's connection, with the package's checks
and exact statistics: the same flow the `merge` materialization runs. See merge_table.

resolve_target (names) resolves a table name the way DuckDB does, for every DuckDB-side door.
Also the dbt-duckdb plugin that loads ClickHouse sources (plugin, loader) and the
merge_history_table job (history)."""

from dbt_merge.duckdb.api import merge_table
from dbt_merge.duckdb.names import Target, resolve_target
from dbt_merge.errors import MergeError
from dbt_merge.result import MergeResult

__all__ = ["MergeError", "MergeResult", "Target", "merge_table", "resolve_target"]
