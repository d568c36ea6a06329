"""A pytest-xdist scheduler: each worker of a parallel run (`-n 2`, as scripts/test.sh runs the
tests) is given whole test files, and files that share something outside their own folders
(`SHARED`) as one unit, so that no two workers run them at once.

A file's module fixtures (a dbt project's first runs) are then made once, by one worker. Each
worker is a process of its own (tests/conftest.py gives it its own state folder, Spark session,
DuckDB file, chdb folder and Thrift cluster), so what a test writes there no other worker sees.
pytest-xdist's `loadgroup` marks would say the same, but pytest 9.2's node ids no longer carry
them (pytest-dev/pytest-xdist#1386).

tests/conftest.py registers the hook; `-p whole_files` (with tests/ on sys.path) loads it into
any other pytest run.
"""

from __future__ import annotations

import pytest

#: path prefix -> unit: the files of one unit share a folder of the repository and run in one
#: worker. The integration project (`integration_tests/`: `dbt deps` rewrites its dbt_packages/,
#: dbt writes its logs/); the source tree the install tests build the package from.
SHARED = {
    "tests/doors/dbt/test_integration.py": "the integration_tests project",
    "tests/package/test_ci_workflow.py": "the integration_tests project",
    "tests/package/install/": "builds from the source tree",
}


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or its group in SHARED."""
    path = nodeid.split("::", 1)[0]
    return next((unit for prefix, unit in SHARED.items() if path.startswith(prefix)), path)


@pytest.hookimpl(optionalhook=True)  # a run without pytest-xdist has no such hook
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "load":  # what `-n N` alone asks for; another --dist is kept
        return None
    from xdist.scheduler import LoadScopeScheduling

    class WholeFiles(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def remove_node(self, node):
            """A worker that died (a crash, the OOM killer) died in its first unfinished test:
            that test is reported failed and not run again. xdist's scope schedulers put it back
            with the rest of its file, and a test that kills its process every time then took
            down every worker in turn and the run never ended (red team helper-95)."""
            workload = self.assigned_work.get(node, {})
            crashed = next((nodeid for unit in workload.values()
                            for nodeid, done in unit.items() if not done), None)
            for unit in workload.values():
                if crashed in unit:
                    unit[crashed] = True
            rest = super().remove_node(node)
            return crashed or rest

    return WholeFiles(config, log)
