"""ClickHouse sources: the connection settings, the client (catalog and streamed reads), the
table engines and the FINAL decision. The loaders that land them are the engines' own:
dbt_merge.duckdb.plugin and dbt_merge.spark.loader."""
