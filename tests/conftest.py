"""Shared fixtures: one Spark session and one DuckDB file per test process, and for the tests
marked `thrift` one standalone Spark cluster with a Thrift server.

The Spark session (and its embedded Derby metastore) is process-global, so every test that
touches Spark shares the state folder chosen here, before any session exists. The cluster has
its own metastore and warehouse in another folder.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest
from suite_summary import (  # noqa: F401 (hooks: one line per suite at the end of the run)
    pytest_collection_modifyitems,
    pytest_runtest_logreport,
    pytest_runtest_protocol,
    pytest_terminal_summary,
)
from whole_files import pytest_xdist_make_scheduler  # noqa: F401 (-n 2: whole files per worker)

ROOT = Path(__file__).resolve().parents[1]
INTEGRATION = ROOT / "integration_tests"

# dbt's own test caching, as dbt's pytest fixtures (dbt.tests.fixtures.project) switch it on:
# within this process, a macro's or a file's Jinja parse, its top-level blocks and the macros it
# calls are kept by their text, so each dbt invocation after the first parses the ~860 macros
# in about 0.7 s instead of 1.9 s (every test project is new to dbt's partial parsing). What a
# model renders, and every statement, is unchanged. DBT_MERGE_TESTS_NO_PARSE_CACHE=1: off.
if not os.environ.get("DBT_MERGE_TESTS_NO_PARSE_CACHE"):
    from dbt_common.tests import enable_test_caching

    enable_test_caching()

# dbt's anonymous usage events: never sent from the tests (every dbt invocation, in-process or a
# child process, posts them with a 5 s timeout; where the network drops packets rather than
# refusing them, each invocation waited for it)
os.environ["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
os.environ["DO_NOT_TRACK"] = "1"

# Everything the run writes outside the repository lives in this one folder, removed when the
# run ends (DBT_MERGE_TESTS_KEEP_STATE=1: kept, for a look after a failure): a full run writes
# about 1 GB there, and a machine running CI repeatedly filled its disk when it was left behind.
_STATE = Path(tempfile.mkdtemp(prefix="dbt_merge_tests_"))


def _remove_state() -> None:
    if not os.environ.get("DBT_MERGE_TESTS_KEEP_STATE"):
        shutil.rmtree(_STATE, ignore_errors=True)


# registered first, so it runs last: after the Spark cluster's stop (atexit runs in reverse)
atexit.register(_remove_state)
os.environ["SPARK_STATE_DIR"] = str(_STATE / "spark")
# Spark's scratch folders (a spark-<uuid> per JVM with its own copy of the Iceberg jar, 45 MB,
# and the shuffle blocks), which a JVM the tests kill -9 never removes: in the state folder too,
# for every JVM the tests start (SPARK_LOCAL_DIRS is read by the driver and the executors).
os.environ["SPARK_LOCAL_DIRS"] = str(_STATE / "spark_local")
os.environ["DBT_MERGE_DUCKDB_PATH"] = str(_STATE / "integration_tests.duckdb")
(_STATE / "spark").mkdir(parents=True, exist_ok=True)
if "ICEBERG_JAR" not in os.environ:
    import snowpark_connect_deps_iceberg as _iceberg

    os.environ["ICEBERG_JAR"] = str(
        _iceberg.get_jar_path("iceberg-spark-runtime-3.5_2.12-1.10.2.jar")
    )


@pytest.fixture
def write_once(monkeypatch):
    """The write-once path (a merge into a merge-on-read or format-3 Iceberg table written into a
    branch of the run and counted from its commit), which a dbt project asks for with the var
    `dbt_merge_commit_counts: true`: set for every project support.scenario.project makes in
    the test, and for the Python doors (render._VARS)."""
    from dbt_merge import render
    from support import scenario

    monkeypatch.setitem(render._VARS, "dbt_merge_commit_counts", True)
    monkeypatch.setitem(scenario.PROJECT_VARS, "dbt_merge_commit_counts", True)


@pytest.fixture
def db(request):
    """The engine a scenario test runs on (parametrize "db" indirectly: "duckdb", "spark" or
    "spark_thrift"), as a support.scenario.Db."""
    from support.scenario import Db

    spark = request.getfixturevalue("spark") if request.param == "spark" else None
    port = request.getfixturevalue("thrift") if request.param == "spark_thrift" else None
    handle = Db(request.param, spark, port)
    yield handle
    handle.close()


@pytest.fixture(scope="session")
def state_dir() -> Path:
    return _STATE


@pytest.fixture(scope="session")
def spark():
    """The process's SparkSession, configured like the integration profile's spark target."""
    from dbt_merge.spark.profile import get_spark_session, load_target, spark_conf

    conf = spark_conf(load_target(INTEGRATION, "integration_tests", "spark"))
    # This JVM lives for the whole run, ~45 minutes of Spark: with the optimizing JIT (C2) the
    # Spark differential and condition suites took 374 s against 394 s with the profile's
    # TieredStopAtLevel=1, the later suite 50 s against 65 s (2026-12-02, same cases). The
    # profile keeps the flag for the JVMs that live seconds: the kill tests' `dbt run`s (40%
    # slower without it, 2026-11-28), the examples, the docs' profile.
    key = "spark.driver.extraJavaOptions"
    conf[key] = conf[key].replace("-XX:TieredStopAtLevel=1", "").replace("  ", " ")
    session = get_spark_session(conf)
    session.sparkContext.setLogLevel("ERROR")
    return session


def pytest_sessionfinish(session, exitstatus):
    """Stop Spark, whoever started it (the fixture, or dbt-spark's session method), before the
    interpreter exits. Left running, py4j's gateway threads are still alive when Python
    finalizes, and the duckdb binding then reports its objects as leaked (nanobind's "leaked
    instance" lines, about a hundred of them, at the end of every run that used both engines)."""
    if "pyspark" not in sys.modules:
        return
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    if SparkContext._gateway is not None:
        SparkContext._gateway.shutdown()
        SparkContext._gateway = SparkContext._jvm = None


def _spark_cluster_module():
    path = ROOT / "scripts" / "spark_cluster.py"
    spec = importlib.util.spec_from_file_location("spark_cluster", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def thrift(request) -> int:
    """The port of a Thrift server in front of a standalone Spark cluster (master, worker,
    executors in their own JVMs; scripts/spark_cluster.py), started once for the session's
    thrift tests and stopped when they end, also on failure or Ctrl-C (finalizer and atexit).
    The integration profile's `spark_thrift` target finds it through DBT_MERGE_THRIFT_PORT.

    With DBT_MERGE_THRIFT_PORT already set, the tests use the server found there (e.g. one
    started by hand with `python scripts/spark_cluster.py start`) and leave it running.
    """
    if os.environ.get("DBT_MERGE_THRIFT_PORT"):
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
        # a cluster a worker of this run started (e.g. for a pytest the test runs in a child
        # process) is that worker's own
        own = os.environ.get("DBT_MERGE_TESTS_OWN_THRIFT_PORT")
        if workers > 1 and own != os.environ["DBT_MERGE_THRIFT_PORT"]:
            pytest.fail(
                f"DBT_MERGE_THRIFT_PORT={os.environ['DBT_MERGE_THRIFT_PORT']} names one Thrift "
                f"server, which {workers} test workers would share (their tests write the same "
                "tables): run them in one process (`-n 0`, or DBT_MERGE_TEST_WORKERS=0 for "
                "`make test`), or unset DBT_MERGE_THRIFT_PORT to give each worker a cluster of "
                "its own", pytrace=False)
        return int(os.environ["DBT_MERGE_THRIFT_PORT"])
    cluster_module = _spark_cluster_module()
    state = _STATE / "spark_cluster"

    def stop() -> None:
        cluster_module.stop(state)

    # A SIGTERM (e.g. a CI timeout) would end the process without running atexit.
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    atexit.register(stop)
    request.addfinalizer(stop)
    # the default ports, or under pytest-xdist (a cluster per worker) the default ports plus
    # 100 times the worker's number plus one: outside the range the system picks free ports from
    # (another process's connection could take one before the JVM binds it); a busy one is
    # replaced
    worker = _worker()
    ports = None
    if worker:
        offset = 100 * (int(worker.removeprefix("gw") or 0) + 1)
        ports = {n: port + offset for n, port in cluster_module.DEFAULT_PORTS.items()}
    cluster = cluster_module.start(state, ports)
    print(f"\nthrift server on port {cluster.thrift_port}: cluster started in "
          f"{cluster.started_seconds} s ({state})", file=sys.stderr)
    os.environ["DBT_MERGE_THRIFT_PORT"] = str(cluster.thrift_port)
    os.environ["DBT_MERGE_TESTS_OWN_THRIFT_PORT"] = str(cluster.thrift_port)
    return cluster.thrift_port


def _worker() -> str | None:
    """The pytest-xdist worker this process is ("gw0", "gw1", ...), None when not one."""
    return os.environ.get("PYTEST_XDIST_WORKER")
