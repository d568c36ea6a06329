"""dbt_merge: the Python side of the dbt_merge package (ClickHouse sources, Spark helpers, and
merging into Parquet datasets)."""

__version__ = "0.1.0"


def __getattr__(name: str):
    # Imported on first use: `import dbt_merge` stays light for the dbt plugins and the CLI.
    if name in ("merge_parquet_dataset", "ParquetMergeError"):
        try:
            from dbt_merge import parquet
        except ModuleNotFoundError as missing:
            if missing.name not in ("duckdb", "jinja2"):
                raise
            raise ModuleNotFoundError(
                f"dbt_merge.{name} needs DuckDB and Jinja2, which are not installed here: "
                "pip install 'dbt-merge[parquet]'.", name=missing.name) from None
        return getattr(parquet, name)
    if name == "plugins":
        # read by dbt (its plugin discovery imports dbt_* modules): the halves' version check
        from dbt_merge.dbt_plugin import HalvesCheck

        return [HalvesCheck]
    if name in ("MergeError", "MergeResult"):
        from dbt_merge import errors, result

        return getattr(errors if name == "MergeError" else result, name)
    raise AttributeError(f"module 'dbt_merge' has no attribute {name!r}")
