"""Differential tests: dbt + the package on DuckDB and Spark against the Python reference.

Every case becomes one model of one generated project, run three times per engine:
run 1 must equal the reference (rows and the five statistics, or the error and an unchanged
target); run 2 (the same increment again) must leave the target as it is with 0 inserted,
0 updated, 0 deleted; run 3 (`--full-refresh`, every 4th case) must rebuild it from the
SELECT. The Spark cases are a subset of the DuckDB ones, and the two engines' tables must be
equal.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from dbt_helpers import run_dbt

from .cases import ERROR_EXCERPTS, STRATEGY_NAMES, Case, generate_cases
from .harness import PROFILES_DIR, DuckEngine, SparkEngine, make_project, model_sql
from .reference import MergeError, canonical, merge

PER_STRATEGY = {"upsert": 70, "insert": 50, "update": 60, "full_merge": 70, "deduplicate": 90}
SPARK_EVERY = 9  # every 9th case also runs on Spark


@cache
def all_cases() -> tuple[Case, ...]:
    cases: list[Case] = []
    for strategy in STRATEGY_NAMES:
        cases += generate_cases(strategy, PER_STRATEGY[strategy])
    return tuple(cases)


def spark_cases() -> list[Case]:
    return [c for i, c in enumerate(all_cases()) if i % SPARK_EVERY == 0]


def run_cases(engine, cases, tmp: Path, schema: str) -> tuple[list[str], dict]:
    """Run `cases` twice through dbt on `engine`; return (failures, {case id: final rows})."""
    src_schema = schema + "_src"
    engine.setup(schema, src_schema)
    models = {}
    for case in cases:
        source = engine.source(src_schema, f"s_{case.id}", case.columns, case.source)
        if case.target is None:
            engine.drop(schema, f"m_{case.id}")
        else:
            engine.create(schema, f"m_{case.id}", case.columns, case.target)
        cfg = {**case.config(), "schema": schema}
        if engine.name == "spark":
            cfg["file_format"] = "iceberg"
        models[f"m_{case.id}"] = model_sql(cfg, f"select * from {source}")
    project = make_project(tmp / f"diff_{engine.name}", f"diff_{engine.name}", models)

    failures: list[str] = []
    finals: dict = {}
    args = ["run", "--threads", "2"] if engine.name == "duckdb" else ["run"]
    first = run_dbt(args, project, engine.name, PROFILES_DIR)
    after_first = {}
    for case in cases:
        model = f"m_{case.id}"
        exp = case.expected()
        where = f"[{engine.name} {case.id}] {case!r}\n"
        try:
            if isinstance(exp, MergeError):
                msg = first.error(model)
                excerpt = ERROR_EXCERPTS[exp.kind]
                assert "dbt_merge: model '" + model + "'" in msg and excerpt in msg, (
                    f"expected error {exp.kind!r} ({excerpt!r}), got: {msg}"
                )
                if case.target is None:
                    assert not engine.exists(schema, model), "failed first run left a table"
                else:
                    _, got = engine.rows(schema, model)
                    assert canonical(got, case.names) == canonical(case.target, case.names), (
                        "target changed by a failed merge"
                    )
                continue
            rows, stats = exp
            got_stats = first.stats(model)
            assert got_stats == stats.as_dict(), f"stats {got_stats} != reference {stats}"
            names, got = engine.rows(schema, model)
            assert names == case.names, f"columns {names} != {case.names}"
            assert canonical(got, case.names) == canonical(rows, case.names), (
                f"rows differ:\n got {sorted(map(repr, got))}\n ref {sorted(map(repr, rows))}"
            )
            after_first[case.id] = (rows, stats)
            finals[case.id] = canonical(got, case.names)
        except AssertionError as e:
            failures.append(where + str(e))

    # Idempotence: the same increment again changes nothing.
    second = run_dbt(args, project, engine.name, PROFILES_DIR)
    for case in cases:
        if case.id not in after_first:
            continue
        model = f"m_{case.id}"
        rows, stats = after_first[case.id]
        try:
            got_stats = second.stats(model)
            assert (got_stats["inserted"], got_stats["updated"], got_stats["deleted"]) == (
                0,
                0,
                0,
            ), f"second run changed rows: {got_stats}"
            assert got_stats["total"] == stats.total, f"second run total {got_stats}"
            _, got = engine.rows(schema, model)
            assert canonical(got, case.names) == canonical(rows, case.names), (
                "second run changed rows"
            )
        except AssertionError as e:
            failures.append(f"[{engine.name} {case.id} rerun] {case!r}\n{e}")

    # --full-refresh (every 4th case): the table is rebuilt from the checked, deduplicated
    # SELECT with inserted = total; a bad SELECT fails and leaves the table as it was.
    refreshed = cases[::4]
    third = run_dbt(
        [*args, "--full-refresh", "--select", *[f"m_{c.id}" for c in refreshed]],
        project,
        engine.name,
        PROFILES_DIR,
    )
    for case in refreshed:
        model = f"m_{case.id}"
        try:
            try:
                rows, stats = merge(case.strategy, case.source, None, case.key, case.opts)
            except MergeError as e:
                assert ERROR_EXCERPTS[e.kind] in third.error(model)
                before = case.target
                if before is None:
                    assert not engine.exists(schema, model), "failed rebuild left a table"
                    continue
                rows = before
            else:
                assert third.stats(model) == stats.as_dict(), (
                    f"full refresh stats {third.stats(model)}"
                )
            _, got = engine.rows(schema, model)
            assert canonical(got, case.names) == canonical(rows, case.names), "full refresh rows"
        except AssertionError as e:
            failures.append(f"[{engine.name} {case.id} full-refresh] {case!r}\n{e}")
    return failures, finals


@pytest.fixture(scope="module")
def duckdb_outcome(tmp_path_factory):
    return run_cases(DuckEngine(), all_cases(), tmp_path_factory.mktemp("rel"), "rel_diff")


def test_case_mix():
    """The generated cases cover what the issue lists (guards the generator itself)."""
    cases = all_cases()
    assert len(cases) >= 300 and len(spark_cases()) >= 30
    expected = [c.expected() for c in cases]
    kinds = {e.kind for e in expected if isinstance(e, MergeError)}
    assert kinds == set(ERROR_EXCERPTS)
    ok = [e[1] for e in expected if not isinstance(e, MergeError)]
    assert all(
        sum(getattr(s, f) > 0 for s in ok) >= 20 for f in ("inserted", "updated", "unchanged")
    )
    assert sum(s.deleted > 0 for s in ok) >= 20
    assert sum(c.target is None for c in cases) >= 20
    assert sum(c.target == [] for c in cases) >= 20
    assert sum(not c.source for c in cases) >= 20
    assert sum(len(c.key) > 1 for c in cases) >= 100
    assert sum("nan" in repr(c) for c in cases) >= 20
    assert sum(c.opts.predicate is not None for c in cases) >= 20
    assert {t for c in cases for _, t in c.columns} == {"int", "float", "str", "date", "ts", "bool"}


def test_duckdb_matches_reference(duckdb_outcome):
    failures, finals = duckdb_outcome
    assert not failures, f"{len(failures)} failures:\n\n" + "\n\n".join(failures[:10])
    assert finals


@pytest.mark.spark
def test_spark_matches_reference_and_duckdb(spark, duckdb_outcome, tmp_path_factory):
    failures, finals = run_cases(
        SparkEngine(spark), spark_cases(), tmp_path_factory.mktemp("rel"), "rel_diff"
    )
    assert not failures, f"{len(failures)} failures:\n\n" + "\n\n".join(failures[:10])
    duck = duckdb_outcome[1]
    for case_id, rows in finals.items():
        if case_id in duck:
            assert rows == duck[case_id], f"{case_id}: Spark and DuckDB tables differ"
