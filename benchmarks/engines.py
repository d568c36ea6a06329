"""Direct access to each engine for the benchmark: data, target restore, hand-written SQL.

Restoring a 10M-row target by copying it row by row took 20+ s on a busy 2-core machine, so
both engines restore without rewriting data: on DuckDB every target lives in its own database
file (table `main.target`), restored by copying the pristine file and attaching it; on Spark
the Iceberg table is set back to its pristine snapshot (metadata only).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from . import data
from .data import COLUMNS
from .memory import java_children

ROW_HASH_COLUMNS = ", ".join(COLUMNS)


class DuckDB:
    """A connection to the same DuckDB database instance dbt-duckdb opens (same path and config,
    so DuckDB shares one instance and buffer pool within this process)."""

    name = "duckdb"

    def __init__(self, path: Path):
        import duckdb

        self.version = duckdb.__version__
        self.dir = path.parent
        self.con = duckdb.connect(str(path), read_only=False, config={})

    def execute(self, sql: str) -> None:
        self.con.execute(sql)

    def query(self, sql: str) -> tuple:
        return self.con.execute(sql).fetchone()

    def _file(self, name: str) -> Path:
        return self.dir / f"{name}.duckdb"

    def create_table(self, name: str, select: str) -> None:
        """A source table in the main database."""
        self.execute(f"create or replace table main.{name} as {select}")
        self.execute("checkpoint")

    def create_target(self, name: str, select: str) -> None:
        """A pristine target: database file `name`.duckdb holding main.target."""
        self.execute(f"attach '{self._file(name)}' as {name}")
        self.execute(f"create or replace table {name}.main.target as {select}")
        self.execute(f"detach {name}")

    def target_exists(self, name: str) -> bool:
        return self._file(name).exists()

    def exists(self, table: str) -> bool:
        return bool(
            self.query(
                "select count(*) from information_schema.tables"
                f" where table_catalog = current_database() and table_name = '{table}'"
            )[0]
        )

    def restore(self, name: str, pristine: str, properties: dict | None = None) -> None:
        """Database `name` becomes a fresh copy of the pristine target file (a DuckDB table has
        no `properties`)."""
        self.execute(f"detach database if exists {name}")
        shutil.copyfile(self._file(pristine), self._file(name))
        self.execute(f"attach '{self._file(name)}' as {name}")

    def restore_empty(self, name: str) -> None:
        """Database `name` becomes an empty database: a first load creates the table."""
        self.execute(f"detach database if exists {name}")
        self._file(name).unlink(missing_ok=True)
        self.execute(f"attach '{self._file(name)}' as {name}")

    def target_ref(self, name: str) -> str:
        return f"{name}.main.target"

    def set_source(self, table: str) -> None:
        self.execute(f"create or replace view main.bench_src as select * from main.{table}")

    def source_ref(self) -> str:
        return "main.bench_src"

    def fingerprint(self, name: str) -> tuple:
        return tuple(
            self.query(
                f"select count(*), sum(hash({ROW_HASH_COLUMNS})) from {self.target_ref(name)}"
            )
        )

    def run_statements(self, statements: list[str]) -> float:
        start = time.perf_counter()
        self.execute("begin transaction")
        try:
            for sql in statements:
                self.execute(sql)
        except Exception:
            self.execute("rollback")
            raise
        self.execute("commit")
        return time.perf_counter() - start

    def memory_pid(self) -> int:
        return os.getpid()


class Spark:
    """The process's SparkSession, the same one dbt-spark's session method uses."""

    name = "spark"

    def __init__(self, conf: dict[str, str]):
        from dbt_merge.spark_session import get_spark_session
        from pyspark import __version__

        self.version = __version__
        self.spark = get_spark_session(conf)
        self.execute("create database if not exists bench")
        self._pristine_snapshot: dict[tuple[str, str], int] = {}

    def execute(self, sql: str) -> None:
        self.spark.sql(sql).collect()

    def query(self, sql: str) -> tuple:
        return tuple(self.spark.sql(sql).collect()[0])

    def create_table(self, name: str, select: str, properties: dict | None = None) -> None:
        # `drop table` leaves an Iceberg table in place here (SparkSessionCatalog + V1 commands);
        # an atomic replace works.
        props = ", ".join(f"'{k}' = '{v}'" for k, v in (properties or {}).items())
        tblproperties = f" tblproperties ({props})" if props else ""
        self.execute(
            f"create or replace table bench.{name} using iceberg{tblproperties} as {select}"
        )

    create_target = create_table

    def exists(self, table: str) -> bool:
        return self.spark.catalog.tableExists(f"bench.{table}")

    target_exists = exists

    def _iceberg_table(self, name: str):
        jvm = self.spark._jvm
        return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            self.spark._jsparkSession, f"bench.{name}"
        )

    def restore(self, name: str, pristine: str, properties: dict | None = None) -> None:
        """First time: copy the pristine table (with the table `properties`); afterwards: set
        that copy's first snapshot."""
        snapshot = self._pristine_snapshot.get((name, pristine))
        if snapshot is None:
            self.create_table(name, f"select * from bench.{pristine}", properties)
            table = self._iceberg_table(name)
            self._pristine_snapshot[(name, pristine)] = table.currentSnapshot().snapshotId()
        else:
            table = self._iceberg_table(name)
            table.manageSnapshots().setCurrentSnapshot(snapshot).commit()
            self.execute(f"refresh table bench.{name}")

    def target_ref(self, name: str) -> str:
        return f"bench.{name}"

    def set_source(self, table: str) -> None:
        self.execute(f"create or replace view bench.bench_src as select * from bench.{table}")

    def source_ref(self) -> str:
        return "bench.bench_src"

    def fingerprint(self, name: str) -> tuple:
        return self.query(
            f"select count(*), sum(xxhash64({ROW_HASH_COLUMNS})) from {self.target_ref(name)}"
        )

    def run_statements(self, statements: list[str]) -> float:
        start = time.perf_counter()
        for sql in statements:
            self.execute(sql)
        return time.perf_counter() - start

    def memory_pid(self) -> int:
        jvms = java_children()
        return jvms[0] if jvms else os.getpid()


def open_engine(name: str, duckdb_path: Path, project_dir: Path):
    """The engine the benchmark project's dbt profile points at (same DuckDB file, same Spark
    configuration, so dbt and the benchmark share one DuckDB instance or one SparkSession)."""
    if name == "duckdb":
        return DuckDB(duckdb_path)
    from dbt_merge.spark_session import load_target, spark_conf

    return Spark(spark_conf(load_target(project_dir, "merge_bench", "spark")))


def prepare(engine, inc) -> str:
    """Create the pristine target and the increment `inc` if missing, point the source view at
    the increment, and return the pristine target's name."""
    pristine = data.target_table(inc.target_rows)
    if not engine.target_exists(pristine):
        engine.create_target(pristine, data.target_select(engine.name, inc.target_rows))
    if not engine.exists(inc.table):
        engine.create_table(inc.table, data.increment_select(engine.name, inc))
    engine.set_source(inc.table)
    return pristine
