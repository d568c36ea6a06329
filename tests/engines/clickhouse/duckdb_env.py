"""dbt-duckdb's own environment (the object `dbt run` loads plugin sources through), built
from a profile's credentials with the dbt_merge ClickHouse plugin, outside a dbt run."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dbt.adapters.duckdb import environments
from dbt.adapters.duckdb.credentials import DuckDBCredentials, PluginConfig


def forget_dbt_duckdb_env() -> None:
    """Close the environment an earlier in-process dbt run left behind. dbt-duckdb keeps it
    across runs and, while parsing the next project, loads plugin sources into it (a fresh
    `dbt` process has none then), i.e. into the previous project's database."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager

    with DuckDBConnectionManager._LOCK:
        if DuckDBConnectionManager._ENV is not None:
            DuckDBConnectionManager._ENV.close()
            DuckDBConnectionManager._ENV = None


@contextmanager
def duckdb_env(path: Path, dsn: str) -> Iterator[environments.Environment]:
    creds = DuckDBCredentials(
        path=str(path),
        plugins=[PluginConfig(module="dbt_merge.duckdb.plugin", alias="clickhouse",
                              config={"dsn": dsn})],
    )
    env = environments.create(creds)
    try:
        yield env
    finally:
        env.close()
