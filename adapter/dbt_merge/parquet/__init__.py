"""Merge into Parquet datasets (a folder of Parquet files, no catalog) with the package's plan,
checks and statistics. See merge_parquet_dataset; dataset_files and read_dataset read a dataset
as one merge left it, whatever merges publish meanwhile."""

from dbt_merge.parquet.api import merge_parquet_dataset, merge_with_report, run_merge
from dbt_merge.parquet.errors import ParquetMergeError
from dbt_merge.parquet.reader import dataset_files, read_dataset
from dbt_merge.parquet.session import MergeReport

__all__ = [
    "MergeReport",
    "ParquetMergeError",
    "dataset_files",
    "merge_parquet_dataset",
    "merge_with_report",
    "read_dataset",
    "run_merge",
]
