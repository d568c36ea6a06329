"""Merge into Parquet datasets (a folder of Parquet files, no catalog) with the package's plan,
checks and statistics. See merge_parquet_dataset."""

from dbt_merge.parquet.api import MergeReport, merge_parquet_dataset, run_merge
from dbt_merge.parquet.errors import ParquetMergeError

__all__ = ["MergeReport", "ParquetMergeError", "merge_parquet_dataset", "run_merge"]
