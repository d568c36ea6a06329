"""The one exception the Parquet merge raises for bad input or a refused merge."""

from dbt_merge.errors import MergeError


class ParquetMergeError(MergeError):
    """A merge refused before the dataset was changed (bad config, bad source rows, a guard).
    The dataset is exactly as it was."""
