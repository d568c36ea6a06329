"""A pytest plugin: one line per test suite at the end of a run, so that a reader of CI's log sees
what ran at a glance, e.g. `differential duckdb: 1070 cases, 0 failed, 402 s`.

A suite is a group of test items chosen by the rules below (file, test name, engine). An item
counts as one case, unless it runs many generated cases itself and says how many through
`record_cases(cases, failed)`; its seconds are its setup, call and teardown (a module fixture's
set-up counts for the suite of the first item that uses it). The counts travel in the items'
`user_properties`, so they reach the summary from pytest-xdist workers too.

tests/conftest.py registers the hooks; `-p suite_summary` (with tests/ on sys.path) loads it
into any other pytest run.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

import pytest

#: (pattern over "path::test name", suite name), the first match wins. {engine} is the item's
#: engine from its marks (thrift, spark, else duckdb), {on} the same for suites whose other tests
#: need no engine (" thrift", " spark", else nothing), {what} and {test} the pattern's groups, `_`
#: as spaces.
RULES = (
    (r"tests/flow/test_differential\.py::test_(?P<engine>duckdb|spark|thrift)_"
     r"(?P<what>\w+?)_match_reference", "differential {engine} {what}"),
    (r"tests/flow/test_differential\.py::test_\w+_matches_reference",
     "differential {engine}"),
    (r"tests/flow/test_differential\.py", "differential generator"),
    (r"tests/doors/parquet/test_differential\.py::test_parquet_matches_reference",
     "differential parquet"),
    (r"tests/doors/parquet/test_differential\.py::test_stored_types_and_schema_histories",
     "differential parquet stored types"),
    (r"tests/doors/(?P<what>\w+)/test_contract\w*\.py", "door contract {what}"),
    (r"tests/doors/parquet/", "parquet"),
    (r"tests/flow/test_reference\.py", "reference"),
    (r"tests/flow/test_(?P<what>\w+)\.py", "{what} {engine}"),
    (r"tests/engines/clickhouse/", "clickhouse{on}"),
    (r"tests/engines/(?P<what>\w+)/test_(?P<test>\w+)\.py", "{what} {test} {engine}"),
    (r"tests/doors/dbt/test_integration\.py", "integration {engine}"),
    (r"tests/doors/(?P<what>\w+)/test_(?P=what)\.py", "{what} {engine}"),
    (r"tests/doors/(?P<what>\w+)/test_(?P<test>\w+)\.py", "{what} {test} {engine}"),
    (r"tests/doors/test_(?P<what>\w+)\.py", "doors {what} {engine}"),
    (r"tests/package/install/", "install"),
    (r"tests/package/test_ci_workflow\.py", "ci workflow"),
    (r"tests/package/test_(report|suite_summary)\.py", "unit"),
    (r"", "other{on}"),
)
_CASES = "suite_summary_cases"
_FAILED = "suite_summary_failed"
_current: pytest.Item | None = None


def record_cases(cases: int, failed: int) -> None:
    """Count `cases` generated cases (`failed` of them failed) for the running test item,
    instead of the item itself. Called from the test, or any function it calls."""
    if _current is None:
        return  # not under pytest with this plugin
    _current.user_properties += [(_CASES, cases), (_FAILED, failed)]


def engine_of(item: pytest.Item) -> str:
    if item.get_closest_marker("thrift"):
        return "thrift"
    if item.get_closest_marker("spark"):
        return "spark"
    return "duckdb"


def suite_of(nodeid: str, engine: str) -> str:
    """The suite of a test item, by its node id (`path::name[params]`) and engine."""
    path, _, name = nodeid.partition("::")
    where = f"{path}::{name.split('[')[0]}"
    for pattern, suite in RULES:
        m = re.match(pattern, where)
        if m:
            groups = {k: v.replace("_", " ") for k, v in m.groupdict().items()}
            on = "" if engine == "duckdb" else f" {engine}"
            return suite.format(**{"engine": engine, "on": on, **groups})
    raise AssertionError("the last rule matches everything")


@dataclass
class Suite:
    cases: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0

    def line(self, name: str) -> str:
        text = f"{name}: {self.cases} cases, {self.failed} failed, {self.seconds:.0f} s"
        return text + (f", {self.skipped} skipped" if self.skipped else "")


class _Item:
    """What the reports of one item said."""

    def __init__(self) -> None:
        self.suite = ""
        self.failed = self.skipped = False
        self.seconds = 0.0
        self.cases: int | None = None
        self.failed_cases = 0


_items: dict[str, _Item] = defaultdict(_Item)
_suites: dict[str, str] = {}  # nodeid -> suite, for the items of this process


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        _suites[item.nodeid] = suite_of(item.nodeid, engine_of(item))
        item.user_properties.append(("suite", _suites[item.nodeid]))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    global _current
    _current = item
    try:
        return (yield)
    finally:
        _current = None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    seen = _items[report.nodeid]
    props = dict(report.user_properties)
    seen.suite = props.get("suite", seen.suite)
    seen.seconds += report.duration
    if report.failed:
        seen.failed = True
    elif report.skipped:
        seen.skipped = True
    counts = [v for k, v in report.user_properties if k == _CASES]
    if counts:
        seen.cases = sum(counts)
        seen.failed_cases = sum(v for k, v in report.user_properties if k == _FAILED)


def summarize() -> dict[str, Suite]:
    suites: dict[str, Suite] = defaultdict(Suite)
    for seen in _items.values():
        if not seen.suite:
            continue
        suite = suites[seen.suite]
        suite.seconds += seen.seconds
        if seen.cases is not None:
            suite.cases += seen.cases
            # an item that failed after counting still counts as at least one failure
            suite.failed += max(seen.failed_cases, 1 if seen.failed else 0)
        elif seen.skipped and not seen.failed:
            suite.skipped += 1
        else:
            suite.cases += 1
            suite.failed += seen.failed
    return dict(suites)


@pytest.hookimpl(trylast=True)  # after --durations; only pytest's short summary follows
def pytest_terminal_summary(terminalreporter) -> None:
    suites = summarize()
    if not suites:
        return
    terminalreporter.write_sep("=", "suites")
    for name in sorted(suites):
        terminalreporter.write_line(suites[name].line(name))
