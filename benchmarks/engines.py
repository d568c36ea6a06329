"""Direct access to each engine for the benchmark: data, target restore, hand-written SQL.

Restoring a 10M-row target by copying it row by row took 20+ s on a busy 2-core machine, so
both engines restore without rewriting data: on DuckDB every target lives in its own database
file (table `main.target`), restored by copying the pristine file and attaching it; on Spark
(in-process session, or a Thrift server on a standalone cluster) the Iceberg table is set back
to its pristine snapshot (metadata only).
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from . import data
from .data import COLUMNS
from .memory import java_children

ROW_HASH_COLUMNS = ", ".join(COLUMNS)


class DuckDB:
    """A connection to the same DuckDB database instance dbt-duckdb opens (same path and config,
    so DuckDB shares one instance and buffer pool within this process)."""

    name = dialect = "duckdb"

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

    def executor_pids(self) -> list[int]:
        """None: DuckDB works in this process."""
        return []


class _SparkSQL:
    """What the Spark engines share: Iceberg tables in schema `bench`, spoken in Spark SQL."""

    dialect = "spark"

    def execute(self, sql: str) -> None:
        raise NotImplementedError

    def query(self, sql: str) -> tuple:
        raise NotImplementedError

    def create_table(self, name: str, select: str, properties: dict | None = None) -> None:
        # `drop table` leaves an Iceberg table in place here (SparkSessionCatalog + V1 commands);
        # an atomic replace works.
        props = ", ".join(f"'{k}' = '{v}'" for k, v in (properties or {}).items())
        tblproperties = f" tblproperties ({props})" if props else ""
        self.execute(
            f"create or replace table bench.{name} using iceberg{tblproperties} as {select}"
        )

    def create_target(self, name: str, select: str) -> None:
        self.create_table(name, select)

    def target_ref(self, name: str) -> str:
        return f"bench.{name}"

    def set_source(self, table: str) -> None:
        # dropped, then made: with Iceberg's SQL extensions, a CREATE OR REPLACE VIEW of the session
        # catalog leaves this session reading the view's old query (seen with Iceberg 1.10)
        self.execute("drop view if exists bench.bench_src")
        self.execute(f"create view bench.bench_src as select * from bench.{table}")

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

    def executor_pids(self) -> list[int]:
        """JVMs other than `memory_pid()` that run tasks (none in local mode)."""
        return []


class Spark(_SparkSQL):
    """The process's SparkSession, the same one dbt-spark's session method uses."""

    name = "spark"

    def __init__(self, conf: dict[str, str]):
        from dbt_merge.spark.profile import get_spark_session
        from pyspark import __version__

        self.version = __version__
        self.spark = get_spark_session(conf)
        self.execute("create database if not exists bench")
        self._pristine_snapshot: dict[tuple[str, str], int] = {}

    def execute(self, sql: str) -> None:
        self.spark.sql(sql).collect()

    def query(self, sql: str) -> tuple:
        return tuple(self.spark.sql(sql).collect()[0])

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

    def memory_pid(self) -> int:
        jvms = java_children()
        return jvms[0] if jvms else os.getpid()

    def ui_url(self) -> str | None:
        return self.spark.sparkContext.uiWebUrl


class SparkThrift(_SparkSQL):
    """A PyHive connection to the Thrift server dbt-spark's thrift method talks to: a
    HiveThriftServer2 (the driver) on a standalone cluster whose executors are separate JVMs.

    Statements run synchronously and DDL/DML results are never fetched (the Thrift server
    answers them with a result column but no data). A target is restored without rewriting
    data by `alter table ... set tblproperties ('current-snapshot-id' = ...)`, which Iceberg's
    catalog turns into a snapshot rollback (no Iceberg SQL extensions needed: the server runs
    without them, as the test cluster does)."""

    name = "spark_thrift"

    def __init__(self, port: int, driver_pid: int, worker_pid: int, ui_port: int | None = None):
        from pyhive import hive
        from pyspark import __version__

        self.version = __version__
        self.driver_pid, self.worker_pid, self.ui_port = driver_pid, worker_pid, ui_port
        self.con = hive.connect(host="localhost", port=port, username="bench")
        self.cur = self.con.cursor()
        self.execute("create database if not exists bench")
        self._pristine_snapshot: dict[tuple[str, str], int] = {}

    def execute(self, sql: str) -> None:
        self.cur.execute(sql)

    def query(self, sql: str) -> tuple:
        self.cur.execute(sql)
        return tuple(self.cur.fetchall()[0])

    def exists(self, table: str) -> bool:
        self.cur.execute(f"show tables in bench like '{table}'")
        return bool(self.cur.fetchall())

    target_exists = exists

    def restore(self, name: str, pristine: str, properties: dict | None = None) -> None:
        """First time: copy the pristine table (with the table `properties`); afterwards: set
        that copy's first snapshot again (metadata only)."""
        snapshot = self._pristine_snapshot.get((name, pristine))
        if snapshot is None:
            self.create_table(name, f"select * from bench.{pristine}", properties)
            refs = f"bench.{name}.refs"
            snapshot = self.query(f"select snapshot_id from {refs} where name = 'main'")[0]
            self._pristine_snapshot[(name, pristine)] = snapshot
        else:
            # dbt ran in its own Thrift session, whose catalog cache this session does not see
            self.execute(f"refresh table bench.{name}")
            self.execute(
                f"alter table bench.{name} set tblproperties ('current-snapshot-id' = '{snapshot}')"
            )

    def fingerprint(self, name: str) -> tuple:
        self.execute(f"refresh table {self.target_ref(name)}")
        return super().fingerprint(name)

    def memory_pid(self) -> int:
        """The Thrift server's JVM: the driver (planning, broadcasts, Iceberg commits)."""
        return self.driver_pid

    def executor_pids(self) -> list[int]:
        """The executor JVMs the worker launched for the Thrift server."""
        return java_children(self.worker_pid)

    def ui_url(self) -> str | None:
        return f"http://localhost:{self.ui_port}" if self.ui_port else None


#: The benchmark's own cluster: its state folder and ports, apart from the tests' cluster
#: (.state/spark_cluster or a temp folder, ports 7077/10000/18080/18081).
BENCH_CLUSTER_DIR = Path(__file__).resolve().parent.parent / ".state" / "bench_cluster"
BENCH_CLUSTER_PORTS = {"master": 7177, "thrift": 10100, "master_ui": 18180, "worker_ui": 18181}
BENCH_DRIVER_UI_PORT = 18182


def _cluster_module():
    path = Path(__file__).resolve().parent.parent / "scripts" / "spark_cluster.py"
    spec = importlib.util.spec_from_file_location("spark_cluster", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@contextmanager
def bench_cluster(ui: bool = False, log=print):
    """Start the benchmark's cluster (master, worker, Thrift server; scripts/spark_cluster.py)
    in BENCH_CLUSTER_DIR with fresh tables, yield (cluster, driver UI port or None), and stop
    exactly the JVMs it started afterwards, also when the benchmark fails or is interrupted.
    The Thrift server runs Iceberg's SQL extensions, as the benchmark's session does.

    JVMs with their own defaults (C2 JIT, G1), as the session benchmark's driver: the test
    cluster's C1-only, serial-GC options start fast but run 3-6x slower. Driver 2 GB, two
    executors of 1 core and 1 GB (the worker offers 2 cores, 2 GB)."""
    module = _cluster_module()
    state = BENCH_CLUSTER_DIR
    for sub in ("metastore_db", "warehouse", "work", "tmp"):
        shutil.rmtree(state / sub, ignore_errors=True)
    ui_port = module.choose_ports({"ui": BENCH_DRIVER_UI_PORT})["ui"] if ui else None
    conf = {
        # Iceberg's SQL extensions, as the benchmark's session has them (the tests' cluster runs
        # without, for the other configuration): the write-once path in SQL, v3 tables
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={state}",
        "spark.executor.extraJavaOptions": "",
        "spark.executor.memory": "1g",
        "spark.ui.enabled": "true" if ui else "false",
        **({"spark.ui.port": str(ui_port), "spark.ui.retainedJobs": "100000"} if ui else {}),
    }

    def stop() -> None:
        for line in module.stop(state):
            log(f"bench cluster: {line}")

    # a SIGTERM would end the process without running the finally clause or atexit
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    atexit.register(stop)
    cluster = module.start(state, BENCH_CLUSTER_PORTS, driver_memory="2g", conf=conf)
    try:
        log(
            f"bench cluster: Thrift server on port {cluster.thrift_port} after "
            f"{cluster.started_seconds} s ({state}, PIDs {cluster.pids})"
        )
        yield cluster, ui_port
    finally:
        stop()
        atexit.unregister(stop)


def open_engine(name: str, duckdb_path: Path, project_dir: Path, cluster=None, ui_port=None):
    """The engine the benchmark project's dbt profile points at (same DuckDB file, same Spark
    configuration, so dbt and the benchmark share one DuckDB instance or one SparkSession; or
    the Thrift server of `cluster`, a started `bench_cluster`)."""
    if name == "duckdb":
        return DuckDB(duckdb_path)
    if name == "spark_thrift":
        return SparkThrift(
            cluster.thrift_port, cluster.pids["thrift"], cluster.pids["worker"], ui_port
        )
    from dbt_merge.spark.profile import load_target, spark_conf

    return Spark(spark_conf(load_target(project_dir, "merge_bench", "spark")))


def prepare(engine, inc) -> str:
    """Create the pristine target and the increment `inc` if missing, point the source view at
    the increment, and return the pristine target's name."""
    pristine = data.target_table(inc.target_rows)
    if not engine.target_exists(pristine):
        engine.create_target(pristine, data.target_select(engine.dialect, inc.target_rows))
    if not engine.exists(inc.table):
        engine.create_table(inc.table, data.increment_select(engine.dialect, inc))
    engine.set_source(inc.table)
    return pristine


def mark_keys_verified(engine, name: str) -> None:
    """Mark the restored table `name` as the snapshot the package published last, its keys
    verified (the table property merge_on_branch reads): a table the package merged before and
    nobody else wrote since, so a merge into it need not read its keys (the steady state of a
    pipeline; restoring the pristine snapshot otherwise looks like another writer's commit)."""
    table = engine.target_ref(name)
    snapshot = engine.query(f"select snapshot_id from {table}.refs where name = 'main'")[0]
    rows = engine.query(f"select count(*) from {table}")[0]
    engine.execute(f"alter table {table} set tblproperties "
                   f"('dbt_merge.keys-verified' = '{snapshot}:id:{rows}')")
