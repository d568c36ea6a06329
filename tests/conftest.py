"""Shared fixtures: one Spark session and one DuckDB file per test process.

The Spark session (and its embedded Derby metastore) is process-global, so every test that
touches Spark shares the state folder chosen here, before any session exists.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INTEGRATION = ROOT / "integration_tests"

_STATE = Path(tempfile.mkdtemp(prefix="dbt_merge_tests_"))
os.environ["SPARK_STATE_DIR"] = str(_STATE / "spark")
os.environ["DBT_MERGE_DUCKDB_PATH"] = str(_STATE / "integration_tests.duckdb")
(_STATE / "spark").mkdir(parents=True, exist_ok=True)
if "ICEBERG_JAR" not in os.environ:
    import snowpark_connect_deps_iceberg as _iceberg

    os.environ["ICEBERG_JAR"] = str(
        _iceberg.get_jar_path("iceberg-spark-runtime-3.5_2.12-1.10.2.jar")
    )


@pytest.fixture(scope="session")
def state_dir() -> Path:
    return _STATE


@pytest.fixture(scope="session")
def spark():
    """The process's SparkSession, configured like the integration profile's spark target."""
    from dbt_merge.spark_session import get_spark_session, load_target, spark_conf

    conf = spark_conf(load_target(INTEGRATION, "integration_tests", "spark"))
    session = get_spark_session(conf)
    session.sparkContext.setLogLevel("ERROR")
    return session
