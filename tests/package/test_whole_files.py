"""The parallel run's scheduler (tests/whole_files.py), in a pytest run of its own with two
workers over a small test tree: every test of a file, and every file of a SHARED unit, runs in
one worker process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from whole_files import SHARED, unit_of

TESTS = Path(__file__).resolve().parents[1]

# each test records the worker process that ran it; a file's tests sleep a little so that the
# other worker, idle, would take some of them if it were handed single tests
TEST_FILE = """
    import json, os, time

    import pytest


    @pytest.mark.parametrize("n", range(6))
    def test_records_its_worker(n, request):
        time.sleep(0.05)
        with open(os.environ["WORKERS_LOG"], "a") as log:
            log.write(json.dumps([request.node.nodeid, os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")
"""
FILES = [
    "tests/flow/test_a.py",
    "tests/flow/test_b.py",
    "tests/doors/dbt/test_integration.py",
    "tests/package/test_ci_workflow.py",
    "tests/package/install/test_from_wheel.py",
    "tests/package/install/test_documented_forms.py",
]


def test_a_file_and_a_shared_unit_run_in_one_worker(tmp_path):
    for name in FILES:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(TEST_FILE))
    log = tmp_path / "workers.log"
    env = {**os.environ, "WORKERS_LOG": str(log), "PYTHONPATH": os.pathsep.join(filter(None, [
        str(TESTS), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "whole_files", "-p", "no:cacheprovider", "-q",
         "-n", "2", "tests"], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    ran = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(ran) == 6 * len(FILES)
    workers: dict[str, set] = {}
    for nodeid, worker in ran:
        workers.setdefault(unit_of(nodeid), set()).add(worker)
    assert set(workers) == {"tests/flow/test_a.py", "tests/flow/test_b.py",
                            *set(SHARED.values())}
    assert all(len(w) == 1 for w in workers.values()), workers
    # both workers had work: the run was parallel
    assert len(set().union(*workers.values())) == 2, workers


def test_units():
    assert unit_of("tests/flow/test_a.py::test_x[duckdb]") == "tests/flow/test_a.py"
    assert unit_of("tests/doors/dbt/test_integration.py::test_x[spark]") == unit_of(
        "tests/package/test_ci_workflow.py::test_workflow_dry_run_report")
    assert unit_of("tests/package/install/test_from_wheel.py::t") == unit_of(
        "tests/package/install/test_documented_forms.py::t")
    assert unit_of("tests/package/test_examples.py::t") == "tests/package/test_examples.py"


def test_a_test_that_kills_its_worker_fails_once_and_the_run_ends(tmp_path):
    """The test that killed its worker is reported failed, not run again on the next worker
    (where it killed that one too, and the run never ended: red team helper-95); its file's
    other tests run."""
    path = tmp_path / "tests" / "test_crash.py"
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent("""
        import os, signal


        def test_before():
            pass


        def test_kills_its_process():
            os.kill(os.getpid(), signal.SIGKILL)


        def test_after():
            pass
    """))
    (tmp_path / "tests" / "test_other.py").write_text("def test_other():\n    pass\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        str(TESTS), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "whole_files", "-p", "no:cacheprovider", "-q",
         "-n", "2", "-rfE", "tests"], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "1 failed, 3 passed" in out, out
    assert "FAILED tests/test_crash.py::test_kills_its_process" in out, out
