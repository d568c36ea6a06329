"""The dbt-duckdb plugin's former path, which profiles.yml files name (`module:
dbt_merge.duckdb_plugin`): the plugin is `dbt_merge.duckdb.plugin`."""

from dbt_merge.duckdb.plugin import Plugin

__all__ = ["Plugin"]
