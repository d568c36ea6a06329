"""The differential suite through merge_dataframe (dbt_merge.spark): a slice of the Spark cases,
run as PySpark calls instead of dbt models, against the same reference model.

Every DATAFRAME_EVERY-th unit of the Spark cases (offset from the thrift slice's, so the two
slices differ) and every 3rd case of the Spark suites of conditions, soft deletes and dry runs,
less what only dbt has: `--empty` runs and enforced contracts. Each case is a
DataFrame of the case's SELECT, merged into the case's Iceberg table (merge-on-read or
copy-on-write and full_merge_write as on Spark) three times, as the dbt suite runs its models:
first with the case's mode (a plain merge or full_refresh=True), then plainly again, then (every
4th case) with full_refresh=True. After each call: the statistics of the result and the rows
of the table equal the reference's, or the call raised MergeError with the catalogue's message
(in the DataFrame's wording) and the table is as it was.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from flow.test_differential import (
    SCHEMA,
    THRIFT_EVERY,
    Failure,
    assert_table,
    check_invariants,
    finish,
    full_merge_write,
    merge_on_read,
    only,
    read_table,
    spark_cases,
    spark_condition_cases,
    spark_dry_run_cases,
    spark_soft_delete_cases,
    table_properties,
)
from support.cases import ERROR_EXCERPTS, Case
from support.harness import SparkEngine, spark_quote

DATAFRAME_EVERY = 8  # of the Spark cases' units, starting half-way between thrift's


def dbt_only(case: Case) -> bool:
    return case.mode.startswith("empty") or case.contract is not None


def dataframe_cases() -> tuple[Case, ...]:
    """The slice, plus every 3rd of the Spark suites of the conditions, soft deletes and dry
    runs (options that are keywords here)."""
    units: dict[str, list[Case]] = defaultdict(list)
    for case in spark_cases():
        if not dbt_only(case):
            units[case.table].append(case)
    cases = [c for u in list(units.values())[THRIFT_EVERY // 2 :: DATAFRAME_EVERY] for c in u]
    for suite in (spark_condition_cases, spark_soft_delete_cases, spark_dry_run_cases):
        cases += [c for c in suite() if not dbt_only(c)][::3]
    return tuple(cases)


def dataframe_wording(excerpt: str) -> str:
    from dbt_merge.render import source_wording

    return source_wording(excerpt, "the DataFrame")


class _Stats:
    """What check_invariants reads of a dbt run: the five statistics of the model."""

    def __init__(self, stats: dict):
        self._stats = stats

    def stats(self, model: str) -> dict:
        return self._stats


def call(spark, case: Case, mode: str):
    """merge_dataframe with the case's config: (result or None, error text or None)."""
    from dbt_merge.spark import MergeError, merge_dataframe

    cfg = case.config(spark_quote)
    key = cfg.pop("unique_key")
    strategy = cfg.pop("strategy")
    properties = table_properties(case, SparkEngine)
    if properties:
        cfg["tblproperties"] = properties
    if full_merge_write(case):
        cfg["full_merge_write"] = full_merge_write(case)
    view = f"global_temp.{SCHEMA}_src_s_{case.id}"
    df = spark.sql(case.select(view, spark_quote, "rand()"))
    try:
        result = merge_dataframe(
            df, f"{SCHEMA + case.schema_suffix}.{case.table}", key, strategy,
            file_format="iceberg", full_refresh=mode == "full_refresh", **cfg,
        )  # fmt: skip
    except MergeError as e:
        return None, str(e)
    except Exception as e:  # noqa: BLE001 - an engine error is a finding, reported as text
        return None, f"{type(e).__name__} (not MergeError): {str(e)[:600]}"
    return result, None


def check_call(
    engine, case: Case, mode: str, before, result, error, engine_name="spark",
    wording=dataframe_wording,
):
    """(what is wrong or None, the table afterwards), for a call of a Python door on engine_name
    (merge_table's slice uses it too), its messages read in that door's wording."""
    expected = case.outcome(mode, before, engine_name)
    shape = expected.after if expected else case.columns_after(mode, before, error is None)
    after = read_table(engine, SCHEMA + case.schema_suffix, case.table, shape)
    mask = [case.random_column] if case.random_column else []
    status = "success" if error is None else "error"
    try:
        if case.nondet:
            stats = result.as_dict() if result else {}
            check_invariants(case, mode, before, after, status, error or "", _Stats(stats))
        if expected and expected.error:
            kinds = expected.error.kinds
            assert error is not None, f"expected error {kinds}, got {result}"
            prefix = f"dbt_merge: table '{SCHEMA + case.schema_suffix}.{case.table}': "
            assert error.startswith(prefix), error[:600]
            assert any(wording(ERROR_EXCERPTS[k]) in error for k in kinds), (
                f"expected error {kinds}, got: {error[:600]}")
            assert_table(after, before, "a failed call changed the table", mask)
        elif expected:
            assert error is None, f"expected success, got: {error[:600]}"
            got = {k: v for k, v in result.as_dict().items() if k in expected.stats.as_dict()}
            assert got == expected.stats.as_dict(), f"stats {got} != reference {expected.stats}"
            assert (result.held_back or 0) == expected.stats.held_back, (
                f"held back {result.held_back} != reference {expected.stats.held_back}")
            assert result.dry_run == case.dry_run, result
            assert_table(after, expected.after, "rows differ from the reference", mask)
    except AssertionError as e:
        return str(e), after
    return None, after


def run_cases(spark, cases: tuple[Case, ...]) -> list[Failure]:
    engine = SparkEngine(spark)
    engine.setup(SCHEMA, SCHEMA + "_twin", SCHEMA + "_src")
    for case in cases:
        engine.source(SCHEMA + "_src", f"s_{case.id}", case.source_columns, case.source)
        if case.target is None:
            engine.drop(SCHEMA + case.schema_suffix, case.table)
        else:
            engine.create(SCHEMA + case.schema_suffix, case.table, case.target_columns,
                          case.target, table_properties(case, engine))
    failures: list[Failure] = []
    state = {c.id: c.initial() for c in cases}
    steps = [("first", None, cases), ("rerun", "run", cases),
             ("refresh", "full_refresh", cases[::4])]
    for step, step_mode, selected in steps:
        for case in selected:
            if any(f.case is case for f in failures):
                continue
            mode = step_mode or case.mode
            result, error = call(spark, case, mode)
            problem, state[case.id] = check_call(engine, case, mode, state[case.id], result, error)
            if problem:
                failures.append(Failure(case, step, problem))
    return failures


def test_dataframe_case_mix():
    """The slice meets every strategy, errors and successes, and both kinds of Iceberg write."""
    cases = dataframe_cases()
    assert len(cases) >= 10, len(cases)
    assert {c.strategy for c in cases} == {"upsert", "insert", "update", "full_merge",
                                           "deduplicate"}
    assert any(merge_on_read(c) for c in cases) and not all(merge_on_read(c) for c in cases)
    outcomes = [c.outcome(c.mode, c.initial(), "spark") for c in cases]
    assert any(o and o.error for o in outcomes) and any(o and o.stats for o in outcomes)
    features = {f for c in cases for f in c.features()}
    assert {"condition:update", "condition:delete", "dry_run"} <= features, features
    assert any(c.opts.soft_delete for c in cases)


@pytest.mark.spark
def test_merge_dataframe_matches_reference(spark, tmp_path: Path):
    cases = only(dataframe_cases())
    failures = run_cases(spark, cases)
    finish("spark_dataframe", cases, failures, tmp_path, dialect="spark")
