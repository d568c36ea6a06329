# examples/merge_table.py
# merge_table: two days of the example project's customers merged into a table of your DuckDB
# connection. pip install "./dbt_merge[parquet]", then run it anywhere.
import datetime

import duckdb
import pyarrow as pa
from dbt_merge.duckdb import merge_table

nov1, nov2, oct30 = (datetime.date(2026, 11, 1), datetime.date(2026, 11, 2),
                     datetime.date(2026, 10, 30))
days = [
    pa.table({"customer_id": [1, 2, 3, 4], "region": ["eu", "us", "eu", "us"],
              "name": ["Ada", "Brendan", "Cleo", "Dmitri"],
              "tier": ["gold", "silver", "bronze", "silver"],
              "updated_at": [nov1, nov1, nov1, nov1]}),
    # day 2: 2 and 3 changed (3 is a late correction), 4 as it was, 5 new, 1 not in the extract
    pa.table({"customer_id": [2, 3, 4, 5], "region": ["us", "us", "us", "eu"],
              "name": ["Brendan", "Cleo", "Dmitri", "Eun"],
              "tier": ["gold", "bronze", "silver", "silver"],
              "updated_at": [nov2, oct30, nov1, nov2]}),
]

con = duckdb.connect()  # yours: any connection, a file or in memory
con.execute("create schema analytics")
for arrow_table in days:
    result = merge_table(con, arrow_table, "analytics.customers", key_columns=["customer_id"],
                         strategy="upsert", merge_check_columns=["updated_at"])
    print(f"analytics.customers: {result.inserted} inserted, {result.updated} updated, "
          f"{result.deleted} deleted, {result.unchanged} unchanged, {result.total} total")
# analytics.customers: 4 inserted, 0 updated, 0 deleted, 0 unchanged, 4 total
# analytics.customers: 1 inserted, 2 updated, 0 deleted, 1 unchanged, 5 total
