"""dbt_merge: the Python side of the dbt_merge package (ClickHouse sources, Spark helpers)."""

__version__ = "0.1.0"
