"""dbt-duckdb plugin: load ClickHouse sources (FINAL-aware) as a stream of Arrow batches.

profiles.yml::

    plugins:
      - module: dbt_merge.duckdb_plugin
        alias: clickhouse
        config:
          dsn: "{{ env_var('CLICKHOUSE_DSN') }}"   # or host/port/username/password/database

sources: ``meta: {plugin: clickhouse, use_final: true|false}`` (per source or per table).
"""

from __future__ import annotations

import threading
from typing import Any

from dbt.adapters.duckdb.plugins import BasePlugin
from dbt.adapters.duckdb.utils import SourceConfig

from dbt_merge.clickhouse_client import Catalog, connect
from dbt_merge.clickhouse_config import ClickHouseConfig
from dbt_merge.final_decision import parse_use_final


class Plugin(BasePlugin):
    def initialize(self, plugin_config: dict[str, Any]) -> None:
        self._config = ClickHouseConfig.from_mapping(plugin_config)
        self._lock = threading.Lock()
        self._catalog: Catalog | None = None

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
