"""A PySpark job that merges a DataFrame into an Iceberg table with dbt_merge, twice.

    pip install "./dbt_merge[spark]"     # PySpark 3.5 and an Iceberg runtime jar; Java 17
    python examples/pyspark_job.py

The session is built from the `spark` target of the example project's profiles.yml
(examples/project/profiles.yml: the Iceberg runtime jar in $ICEBERG_JAR, default the one the
`spark` extra installs; the Hive metastore in $SPARK_STATE_DIR, default ./.state/spark); any
SparkSession with an Iceberg catalog does. The first merge creates analytics.customers, the
second one updates a customer whose updated_at moved, inserts a new one and leaves the rest as
they are. tests/doors/merge_dataframe/test_merge_dataframe.py runs it.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def session():
    os.environ.setdefault("SPARK_STATE_DIR", str(ROOT / ".state" / "spark"))
    if "ICEBERG_JAR" not in os.environ:
        import snowpark_connect_deps_iceberg as iceberg

        os.environ["ICEBERG_JAR"] = str(
            iceberg.get_jar_path("iceberg-spark-runtime-3.5_2.12-1.10.2.jar")
        )
    from dbt_merge.spark.profile import get_spark_session, load_target, spark_conf

    target = load_target(ROOT / "examples" / "project", "examples", "spark")
    return get_spark_session(spark_conf(target))


def merge(df, table: str):
    from dbt_merge.spark import merge_dataframe

    result = merge_dataframe(df, table, key_columns=["customer_id"], strategy="upsert",
                             merge_check_columns=["updated_at"], file_format="iceberg")
    print(f"{table}: {result.inserted} inserted, {result.updated} updated, "
          f"{result.deleted} deleted, {result.unchanged} unchanged, {result.total} total "
          f"(Iceberg snapshot {result.snapshot_id})")
    return result


def main(table: str = "analytics.customers") -> list:
    spark = session()
    spark.sql(f"create database if not exists {table.split('.')[0]}")
    spark.sql(f"drop table if exists {table}")
    schema = "customer_id int, name string, updated_at date"
    day1 = spark.sql("select date'2026-11-01' as d").first().d
    day2 = spark.sql("select date'2026-11-02' as d").first().d
    first = spark.createDataFrame([(1, "Ada", day1), (2, "Brendan", day1)], schema)
    second = spark.createDataFrame(
        [(1, "Ada", day1), (2, "Brendan Eich", day2), (3, "Cleo", day2)], schema
    )
    results = [merge(df, table) for df in (first, second)]
    for row in spark.table(table).orderBy("customer_id").collect():
        print(row)
    return results


if __name__ == "__main__":
    main()
