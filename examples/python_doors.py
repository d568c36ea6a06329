"""The Python doors on DuckDB, without dbt: `merge_table` into a table of your DuckDB connection
and `merge_parquet_dataset` into a folder of Parquet files, each a first load and an increment,
with the customers of the example project's seed (examples/project/seeds/raw_customers.csv).

    pip install "./dbt_merge[parquet]"     # DuckDB, PyArrow and Jinja; no dbt
    cd /some/scratch/folder && python /path/to/dbt_merge/examples/python_doors.py

It writes customers.duckdb and lake/customers/ in the current folder. tests/package/test_examples.py
runs it and holds the docs' snippets to it.
"""

from __future__ import annotations

import datetime

import duckdb
import pyarrow as pa

DAY1, DAY2, LATE = (datetime.date(2026, 11, 1), datetime.date(2026, 11, 2),
                    datetime.date(2026, 10, 30))
#: the customers of day 1, then of day 2: 2 changed, 3 changed (a late correction), 4 as it was,
#: 5 new; 1 is not in day 2's extract
CUSTOMERS = {
    1: pa.table({"customer_id": [1, 2, 3, 4], "region": ["eu", "us", "eu", "us"],
                 "name": ["Ada", "Brendan", "Cleo", "Dmitri"],
                 "tier": ["gold", "silver", "bronze", "silver"],
                 "updated_at": [DAY1, DAY1, DAY1, DAY1]}),
    2: pa.table({"customer_id": [2, 3, 4, 5], "region": ["us", "us", "us", "eu"],
                 "name": ["Brendan", "Cleo", "Dmitri", "Eun"],
                 "tier": ["gold", "bronze", "silver", "silver"],
                 "updated_at": [DAY2, LATE, DAY1, DAY2]}),
}


def merge_into_duckdb(con: duckdb.DuckDBPyConnection, arrow_table: pa.Table):
    from dbt_merge.duckdb import merge_table

    result = merge_table(con, arrow_table, "analytics.customers", key_columns=["customer_id"],
                         strategy="upsert", merge_check_columns=["updated_at"])
    print(f"analytics.customers: {result.inserted} inserted, {result.updated} updated, "
          f"{result.deleted} deleted, {result.unchanged} unchanged, {result.total} total")
    return result


def dataset_first_load():
    from dbt_merge import merge_parquet_dataset

    return merge_parquet_dataset(CUSTOMERS[1].select(["customer_id", "region", "tier"]),
                                 "lake/customers", key_columns=["customer_id"])


def dataset_increment():
    import pyarrow as pa
    from dbt_merge import merge_parquet_dataset

    stats = merge_parquet_dataset(
        source=pa.table({"customer_id": [4, 5], "region": ["us", "eu"],
                         "tier": ["gold", "silver"]}),
        target_path="lake/customers",   # a folder; the first merge creates it
        key_columns=["customer_id"],    # a name or a list (dbt's unique_key)
        strategy="upsert",              # upsert | insert | update | full_merge | deduplicate
        compression="zstd",             # the Parquet codec of the files written
    )
    # into the dataset of customers 1 to 4 that dataset_first_load() wrote:
    # {'inserted': 1, 'updated': 1, 'deleted': 0, 'unchanged': 0, 'total': 5}
    print(stats.as_dict())
    return stats


def main() -> dict:
    """Both doors, a first load and an increment each: their results, by door."""
    con = duckdb.connect("customers.duckdb")
    try:
        con.execute("create schema if not exists analytics")
        tables = [merge_into_duckdb(con, CUSTOMERS[day]) for day in (1, 2)]
    finally:
        con.close()
    datasets = [dataset_first_load(), dataset_increment()]
    return {"merge_table": tables, "merge_parquet_dataset": datasets}


if __name__ == "__main__":
    main()
