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
import signal
import sys
import tempfile
from pathlib import Path

import pytest
import suite_summary
from suite_summary import (  # noqa: F401 (hooks: one line per suite at the end of the run)
    pytest_runtest_logreport,
    pytest_runtest_protocol,
    pytest_terminal_summary,
)

ROOT = Path(__file__).resolve().parents[1]
INTEGRATION = ROOT / "integration_tests"

# dbt's anonymous usage events: never sent from the tests (every dbt invocation, in-process or a
# child process, posts them with a 5 s timeout; where the network drops packets rather than
# refusing them, each invocation waited for it)
os.environ["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
os.environ["DO_NOT_TRACK"] = "1"

_STATE = Path(tempfile.mkdtemp(prefix="dbt_merge_tests_"))
os.environ["SPARK_STATE_DIR"] = str(_STATE / "spark")
os.environ["DBT_MERGE_DUCKDB_PATH"] = str(_STATE / "integration_tests.duckdb")
(_STATE / "spark").mkdir(parents=True, exist_ok=True)
if "ICEBERG_JAR" not in os.environ:
    import snowpark_connect_deps_iceberg as _iceberg

    os.environ["ICEBERG_JAR"] = str(
        _iceberg.get_jar_path("iceberg-spark-runtime-3.5_2.12-1.10.2.jar")
    )


#: Test files that share something outside their own temporary folders, run by one worker under
#: pytest-xdist (`make test` runs two, scripts/test.sh): the integration_tests project folder
#: (its dbt_packages, written by `dbt deps`, and its target folders) and the Thrift cluster, which
#: each worker that runs a thrift test would start for itself; the install tests build from the
#: checkout (setuptools writes its egg-info into it); the ClickHouse tests share their dbt project
#: folder (tests/clickhouse/project: dbt writes its target and logs there).
SHARED_GROUPS = {
    "tests/test_integration.py": "integration_tests",
    "tests/test_ci_workflow.py": "integration_tests",
    "tests/install/": "install",
    "tests/clickhouse/": "clickhouse",
}


#: The groups that take longest, longest first (seconds in one process, idle, 2026-11-28:
#: 793, 767, 254, 127, 112, 103, 100, 99).
LONGEST_GROUPS = (
    "tests/reliability/test_differential.py",
    "integration_tests",
    "tests/reliability/test_faults.py",
    "tests/doors/test_door_spark.py",
    "tests/reliability/test_spark_formats.py",
    "tests/reliability/test_trust.py",
    "tests/reliability/test_writer_race.py",
    "install",
)


def worker_group(nodeid: str) -> str:
    """The group of a test that one pytest-xdist worker runs whole, in collection order: the shared
    groups above; every test over the Thrift server (`thrift` in its name or parameters, as every
    such test has) with the integration_tests group, so that one worker starts the cluster; any
    other test with the rest of its file (its module fixtures made once)."""
    path, _, name = nodeid.partition("::")
    for prefix, group in SHARED_GROUPS.items():
        if path.startswith(prefix):
            return group
    return "integration_tests" if "thrift" in name else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scope scheduling, the scopes being worker_group's (its own `loadgroup` marks
    do not reach the scheduler under pytest 9.2, which no longer takes a changed node id)."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

        def _assign_work_unit(self, node) -> None:
            # the longest groups first (then xdist's order: most tests first), so that neither
            # worker ends the run alone on one of them
            if not getattr(self, "_longest_first", False):
                self._longest_first = True
                for group in reversed(LONGEST_GROUPS):
                    if group in self.workqueue:
                        self.workqueue.move_to_end(group, last=False)
            super()._assign_work_unit(node)

    return GroupScheduling(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    suite_summary.pytest_collection_modifyitems(items)
    for item in items:
        # a thrift test named otherwise would start a second cluster on the other worker
        assert not item.get_closest_marker("thrift") or worker_group(item.nodeid) == (
            "integration_tests"), f"{item.nodeid}: a thrift test needs 'thrift' in its name"


@pytest.fixture(scope="session")
def state_dir() -> Path:
    return _STATE


@pytest.fixture(scope="session")
def spark():
    """The process's SparkSession, configured like the integration profile's spark target."""
    from dbt_merge.spark.profile import get_spark_session, load_target, spark_conf

    conf = spark_conf(load_target(INTEGRATION, "integration_tests", "spark"))
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
    cluster = cluster_module.start(state)
    print(f"\nthrift server on port {cluster.thrift_port}: cluster started in "
          f"{cluster.started_seconds} s ({state})", file=sys.stderr)
    os.environ["DBT_MERGE_THRIFT_PORT"] = str(cluster.thrift_port)
    return cluster.thrift_port
