"""DuckDB: the dbt-duckdb plugin that loads ClickHouse sources (plugin, loader) and the
merge_history_table job (history)."""
