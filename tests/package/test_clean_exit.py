"""A test session that used DuckDB and Spark ends clean: no nanobind "leaked instance" report
from the duckdb binding at interpreter exit (it came when Spark's py4j threads were still
alive as Python finalized; tests/conftest.py stops Spark at the end of the session)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# one DuckDB dbt run and one Spark dbt run, in a pytest process of their own
CHILD_TESTS = [
    "tests/doors/dbt/test_config_keys.py::test_warn_error_fails_the_model_and_leaves_the_target",
    "tests/doors/dbt/test_config_keys.py::test_spark_keys_do_not_warn_but_a_typo_does",
]


@pytest.mark.spark
def test_session_using_duckdb_and_spark_exits_without_leak_reports():
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *CHILD_TESTS],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    output = child.stdout + child.stderr
    assert child.returncode == 0, output[-3000:]
    # the two tests named, the first of them parametrized twice
    assert "3 passed" in output, output[-3000:]
    assert "leaked" not in output, output[-3000:]
