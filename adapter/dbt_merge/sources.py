"""The ClickHouse sources a dbt project declares, read from its parsed manifest."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbt_merge.clickhouse.final_decision import parse_use_final


@dataclass(frozen=True)
class ClickHouseSource:
    """One dbt source table read from ClickHouse (database = the source's schema)."""

    source_name: str
    name: str
    database: str
    table: str
    use_final: bool | None

    @property
    def label(self) -> str:
        return f"{self.source_name}.{self.name}"


def source_options(meta: Mapping[str, Any], config_extra: Mapping[str, Any]) -> dict[str, Any]:
    """Options as dbt-duckdb sees them: `meta`, overridden by custom `config` keys.

    dbt already merged each of them table-over-source, so a table's setting wins over its
    source's within `meta` and within `config`.
    """
    return {**meta, **config_extra}


def from_node(node: Any, plugin: str) -> ClickHouseSource | None:
    """The ClickHouse source of one manifest source node, or None if it is not one."""
    config = node.config
    extra = dict(config.extra or {}) if config is not None else {}
    options = source_options(node.meta or {}, extra)
    if options.get("plugin") != plugin:
        return None
    label = f"{node.source_name}.{node.name}"
    return ClickHouseSource(
        source_name=node.source_name,
        name=node.name,
        database=node.schema,
        table=node.identifier,
        use_final=parse_use_final(options.get("use_final"), label),
    )


def parse_project(
    project_dir: str, profiles_dir: str | None, target: str | None, plugin: str = "clickhouse"
) -> list[ClickHouseSource]:
    """Parse the project with dbt and return its ClickHouse sources, sorted by name."""
    from dbt.cli.main import dbtRunner

    args = ["parse", "--project-dir", str(project_dir), "--quiet"]
    if profiles_dir:
        args += ["--profiles-dir", str(profiles_dir)]
    if target:
        args += ["--target", target]
    # Parse into a scratch folder: the project's own target/ (manifest, partial parse) and
    # logs/ stay as the user's last dbt command left them.
    with tempfile.TemporaryDirectory(prefix="dbt_merge_parse_") as scratch:
        args += ["--target-path", scratch, "--log-path", scratch]
        result = dbtRunner().invoke(args)
    if not result.success:
        raise RuntimeError(f"dbt parse failed for {project_dir}: {result.exception}")
    manifest = result.result
    found = (from_node(node, plugin) for node in manifest.sources.values())
    return sorted((s for s in found if s is not None), key=lambda s: s.label)
