# examples/merge_parquet_dataset.py
# merge_parquet_dataset: a first load and an increment into a folder of Parquet files
# (./lake/customers, made by the first merge, replaced if it is there).
# pip install "./dbt_merge[parquet]", then run it in a scratch folder.
import shutil

import pyarrow as pa
from dbt_merge import merge_parquet_dataset

shutil.rmtree("lake/customers", ignore_errors=True)
first = merge_parquet_dataset(
    source=pa.table({"customer_id": [1, 2, 3, 4], "region": ["eu", "us", "eu", "us"],
                     "tier": ["gold", "silver", "bronze", "silver"]}),
    target_path="lake/customers",   # a folder; the first merge creates it
    key_columns=["customer_id"],    # a name or a list (dbt's unique_key)
)
stats = merge_parquet_dataset(
    source=pa.table({"customer_id": [4, 5], "region": ["us", "eu"],
                     "tier": ["gold", "silver"]}),
    target_path="lake/customers",
    key_columns=["customer_id"],
    strategy="upsert",              # upsert | insert | update | full_merge | deduplicate
    compression="zstd",             # the Parquet codec of the files written
)
for result in (first, stats):
    print(f"lake/customers: {result.inserted} inserted, {result.updated} updated, "
          f"{result.deleted} deleted, {result.unchanged} unchanged, {result.total} total")
# lake/customers: 4 inserted, 0 updated, 0 deleted, 0 unchanged, 4 total
# lake/customers: 1 inserted, 1 updated, 0 deleted, 0 unchanged, 5 total
