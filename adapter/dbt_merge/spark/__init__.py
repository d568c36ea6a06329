"""Merge a Spark DataFrame into a table from a PySpark job, with the package's checks and exact
statistics: the same flow the `merge` materialization runs. See merge_dataframe.

Also the Spark side of the `dbt-merge` command: the session a dbt-spark profile describes
(profile) and the landing of ClickHouse sources into Iceberg tables (loader)."""

from dbt_merge.errors import MergeError
from dbt_merge.result import MergeResult
from dbt_merge.spark.api import merge_dataframe

__all__ = ["MergeError", "MergeResult", "merge_dataframe"]
