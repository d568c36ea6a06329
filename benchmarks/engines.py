"""Direct access to each engine for the benchmark: data, target restore, hand-written SQL."""

from __future__ import annotations

import os
import time
from pathlib import Path

from .data import COLUMNS
from .memory import java_children

ROW_HASH_COLUMNS = ", ".join(COLUMNS)


class DuckDB:
    """A connection to the same DuckDB database instance dbt-duckdb opens (same path and config,
    so DuckDB shares one instance and buffer pool within this process)."""

    name = "duckdb"
    schema = "main"

    def __init__(self, path: Path):
        import duckdb

        self.version = duckdb.__version__
        self.con = duckdb.connect(str(path), read_only=False, config={})

    def execute(self, sql: str) -> None:
        self.con.execute(sql)

    def query(self, sql: str) -> tuple:
        return self.con.execute(sql).fetchone()

    def create_table(self, name: str, select: str) -> None:
        self.execute(f"create or replace table main.{name} as {select}")
        self.execute("checkpoint")

    def restore(self, table: str, pristine: str) -> None:
        self.create_table(table, f"select * from main.{pristine}")

    def exists(self, table: str) -> bool:
        return bool(
            self.query(
                "select count(*) from information_schema.tables"
                f" where table_schema = 'main' and table_name = '{table}'"
            )[0]
        )

    def set_source(self, table: str) -> None:
        self.execute(f"create or replace view main.bench_src as select * from main.{table}")

    def fingerprint(self, table: str) -> tuple:
        return tuple(
            self.query(f"select count(*), sum(hash({ROW_HASH_COLUMNS})) from main.{table}")
        )

    def run_statements(self, statements: list[str]) -> float:
        start = time.perf_counter()
        self.execute("begin transaction")
        for sql in statements:
            self.execute(sql)
        self.execute("commit")
        return time.perf_counter() - start

    def memory_pid(self) -> int:
        return os.getpid()


class Spark:
    """The process's SparkSession, the same one dbt-spark's session method uses."""

    name = "spark"
    schema = "bench"

    def __init__(self, conf: dict[str, str]):
        from dbt_merge.spark_session import get_spark_session
        from pyspark import __version__

        self.version = __version__
        self.spark = get_spark_session(conf)
        self.execute("create database if not exists bench")

    def execute(self, sql: str) -> None:
        self.spark.sql(sql).collect()

    def query(self, sql: str) -> tuple:
        return tuple(self.spark.sql(sql).collect()[0])

    def create_table(self, name: str, select: str) -> None:
        # `drop table` leaves an Iceberg table in place here (SparkSessionCatalog + V1 commands);
        # an atomic replace works.
        self.execute(f"create or replace table bench.{name} using iceberg as {select}")

    def restore(self, table: str, pristine: str) -> None:
        self.create_table(table, f"select * from bench.{pristine}")

    def exists(self, table: str) -> bool:
        return self.spark.catalog.tableExists(f"bench.{table}")

    def set_source(self, table: str) -> None:
        self.execute(f"create or replace view bench.bench_src as select * from bench.{table}")

    def fingerprint(self, table: str) -> tuple:
        return self.query(f"select count(*), sum(xxhash64({ROW_HASH_COLUMNS})) from bench.{table}")

    def run_statements(self, statements: list[str]) -> float:
        start = time.perf_counter()
        for sql in statements:
            self.execute(sql)
        return time.perf_counter() - start

    def memory_pid(self) -> int:
        jvms = java_children()
        return jvms[0] if jvms else os.getpid()
