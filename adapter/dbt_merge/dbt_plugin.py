"""A dbt plugin (dbt's `dbt_*` module discovery reads `dbt_merge.plugins`) that checks the two
halves of the release once per dbt invocation: when the project has the dbt package dbt_merge
installed at another version than this Python package, dbt stops while it reads the project,
before any model runs (version.mismatch says how to fix it). dbt-core calls the hook on every
command that loads the project (run, build, test, compile, parse, ...), not on `dbt deps`, so
packages.yml can still be fixed and installed. dbt's plugin interface is marked experimental;
tests/package/test_release.py runs it on the dbt-core the extras allow."""

from __future__ import annotations

from dbt.plugins.manager import dbt_hook, dbtPlugin
from dbt.plugins.manifest import PluginNodes

from dbt_merge import version


class HalvesCheck(dbtPlugin):
    """Refuses a project whose dbt package dbt_merge is another release; adds no nodes."""

    @dbt_hook
    def get_nodes(self) -> PluginNodes:
        found = _installed_dbt_package(self.project_name)
        if found is not None:
            package, adapter_type = found
            message = version.mismatch(
                package.version, where=package.project_root,
                extra="spark" if adapter_type == "spark" else "duckdb",
                outcome="Nothing was run.")
            if message is not None:
                raise version.VersionMismatchError("dbt_merge: " + message)
        return PluginNodes()


def _installed_dbt_package(project_name: str):
    """(the project of the dbt package dbt_merge as dbt loaded it, the adapter's type) for the
    project dbt is reading, or None when it has no such package (or dbt cannot list its
    packages yet: dbt reports that itself)."""
    from dbt.adapters.factory import FACTORY

    for adapter in list(FACTORY.adapters.values()):
        config = getattr(adapter, "config", None)
        if getattr(config, "project_name", None) != project_name:
            continue
        try:
            package = config.load_dependencies().get("dbt_merge")
        except Exception:  # noqa: BLE001 (uninstalled packages: dbt's own error follows)
            return None
        if package is None or package.project_name == project_name:
            return None  # no dbt package, or this repository run as the root project
        return package, config.credentials.type
    return None
