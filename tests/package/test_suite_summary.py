"""The suite summary plugin (suite_summary.py), in a pytest run of its own over a small test tree
laid out like ours: generated cases counted as cases, failures, skips, engines, seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

FILES = {
    "pytest.ini": """
        [pytest]
        markers =
            spark: spark
            thrift: thrift
    """,
    "tests/flow/test_differential.py": """
        import time

        import pytest
        from suite_summary import record_cases


        @pytest.fixture(scope="module")
        def duckdb_cases():
            record_cases(0, 0)  # counted by the test, not by its fixture
            return 120


        def test_duckdb_matches_reference(duckdb_cases):
            record_cases(duckdb_cases, 0)


        def test_duckdb_conditions_match_reference():
            record_cases(30, 2)
            assert False, "2 cases failed"


        @pytest.mark.spark
        def test_spark_matches_reference():
            time.sleep(1.6)
            record_cases(15, 0)


        def test_case_mix():
            pass
    """,
    "tests/doors/dbt/test_integration.py": """
        import pytest

        ENGINES = [
            "duckdb",
            pytest.param("spark", marks=pytest.mark.spark),
            pytest.param("spark_thrift", marks=[pytest.mark.spark, pytest.mark.thrift]),
        ]


        @pytest.fixture(params=ENGINES)
        def engine(request):
            if request.param == "spark_thrift":
                raise RuntimeError("no cluster")
            return request.param


        def test_a(engine):
            assert engine != "spark"


        def test_b(engine):
            pass


        @pytest.mark.skip(reason="not here")
        def test_c():
            pass
    """,
    "tests/doors/parquet/test_differential.py": """
        import pytest
        from suite_summary import record_cases


        @pytest.mark.parametrize("n", [3, 4])
        def test_parquet_matches_reference(n):
            record_cases(n, 0)
    """,
    "tests/flow/__init__.py": "",
    "tests/doors/parquet/__init__.py": "",
    "tests/test_other.py": """
        def test_one():
            pass
    """,
}


def test_one_line_per_suite(tmp_path):
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        str(TESTS), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "suite_summary", "-p", "no:cacheprovider", "-q",
         "tests"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = run.stdout
    assert run.returncode == 1, out
    summary = out[out.index("= suites ="):].splitlines()[1:]
    lines = {line.split(":")[0]: line for line in summary if ": " in line and " cases," in line}
    seconds = {name: int(line.split(", ")[2].split()[0]) for name, line in lines.items()}
    assert seconds["differential spark"] >= 1, out
    strip = {name: line.replace(f", {seconds[name]} s", "") for name, line in lines.items()}
    assert strip == {
        "differential duckdb": "differential duckdb: 120 cases, 0 failed",
        "differential generator": "differential generator: 1 cases, 0 failed",
        "differential duckdb conditions": "differential duckdb conditions: 30 cases, 2 failed",
        "differential spark": "differential spark: 15 cases, 0 failed",
        "differential parquet": "differential parquet: 7 cases, 0 failed",
        "integration duckdb": "integration duckdb: 2 cases, 0 failed, 1 skipped",
        "integration spark": "integration spark: 2 cases, 1 failed",
        "integration thrift": "integration thrift: 2 cases, 2 failed",
        "other": "other: 1 cases, 0 failed",
    }, out
