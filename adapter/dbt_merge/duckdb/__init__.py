"""Merge into a DuckDB table from Python, on the caller's connection, with the package's checks
and exact statistics: the same flow the `merge` materialization runs. See merge_table.

Also the dbt-duckdb plugin that loads ClickHouse sources (plugin, loader) and the
merge_history_table job (history)."""

from dbt_merge.duckdb.api import merge_table
from dbt_merge.errors import MergeError
from dbt_merge.result import MergeResult

__all__ = ["MergeError", "MergeResult", "merge_table"]
