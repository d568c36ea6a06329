"""dbt-duckdb plugin: load ClickHouse sources (FINAL-aware) as a stream of Arrow batches.

profiles.yml::

    plugins:
      - module: dbt_merge.duckdb.plugin   # dbt_merge.duckdb_plugin, the path before, works too
        alias: clickhouse
        config:
          dsn: "{{ env_var('CLICKHOUSE_DSN') }}"   # or host/port/username/password/database

sources: ``meta: {plugin: clickhouse, use_final: true|false}`` (per source or per table).

dbt-duckdb writes what `load` returns into DuckDB itself, pasting the names unquoted and letting
threads race on the catalog (see `dbt_merge.duckdb.loader`). So the plugin also routes the loads
of its own sources (only those) through that loader: `initialize` wraps dbt-duckdb's
`LocalEnvironment.load_source` once per process.
"""

from __future__ import annotations

import threading
from typing import Any

from dbt.adapters.duckdb.plugins import BasePlugin
from dbt.adapters.duckdb.utils import SourceConfig

from dbt_merge.clickhouse.client import Catalog, connect
from dbt_merge.clickhouse.config import ClickHouseConfig
from dbt_merge.clickhouse.final_decision import parse_use_final
from dbt_merge.duckdb import loader as duckdb_loader


class Plugin(BasePlugin):
    def initialize(self, plugin_config: dict[str, Any]) -> None:
        self._config = ClickHouseConfig.from_mapping(plugin_config)
        self._lock = threading.Lock()
        self._catalog: Catalog | None = None
        _route_source_loads()

    def load(self, source_config: SourceConfig):
        source = f"'{source_config.name}' ({source_config.schema}.{source_config.identifier})"
        use_final = parse_use_final(source_config.get("use_final"), source)
        with self._lock:
            if self._catalog is None:
                self._catalog = Catalog(connect(self._config))
            plan = self._catalog.plan(
                source_config.schema, source_config.identifier, use_final, source
            )
        return self._catalog.stream(plan)


def load_source(env: Any, plugin: Plugin, source_config: SourceConfig) -> None:
    """What dbt-duckdb's `load_source` does for a plugin source (save_mode, materialization),
    with every name quoted and the catalog changes serialized."""
    database, schema, table = source_config.database, source_config.schema, source_config.identifier
    name = duckdb_loader.qualified(database, schema, table)
    handle = env.handle()
    try:
        cursor = handle.cursor()
        if schema:
            duckdb_loader.create_schema(cursor, database, schema)
        save_mode = source_config.get("save_mode", "overwrite")
        if save_mode in ("ignore", "error_if_exists") and duckdb_loader.table_exists(
            cursor, database, schema, table
        ):
            if save_mode == "error_if_exists":
                raise Exception(f"Source {name} already exists!")
            return
        materialization = source_config.meta.get(
            "materialization", plugin.default_materialization()
        )
        with duckdb_loader.table_lock(name):
            duckdb_loader.create_from_stream(
                cursor, name, plugin.load(source_config), materialization, env._REGISTERED_DF
            )
    finally:
        handle.close()


def _route_source_loads() -> None:
    from dbt.adapters.duckdb.environments.local import LocalEnvironment

    original = LocalEnvironment.load_source
    if getattr(original, "dbt_merge_route", False):
        return

    def routed(self, plugin_name: str, source_config: SourceConfig):
        plugin = self._plugins.get(plugin_name)
        if isinstance(plugin, Plugin):
            return load_source(self, plugin, source_config)
        return original(self, plugin_name, source_config)

    routed.dbt_merge_route = True
    LocalEnvironment.load_source = routed
