"""The integration_tests dbt project on DuckDB and Spark/Iceberg, driven in-process.

Per engine: seed, first run (initial state), second run (the increment), `dbt test` (every model
equals its *_expected seed, keys unique), then the increment again (idempotence). Error models
(tag error_case) get a good first run, then a bad second run that must fail with a clear message
and leave the target exactly as it was.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from dbt_helpers import STAT_NAMES, run_dbt

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "integration_tests"
SCHEMA = {"duckdb": "main", "spark": "analytics"}
ENGINES = ["duckdb", pytest.param("spark", marks=pytest.mark.spark)]

EXPECTED_STATS = {
    row["model"]: {k: int(row[k]) for k in STAT_NAMES}
    for row in csv.DictReader(open(PROJECT / "seeds/expected/merge_stats_expected.csv"))
}
MERGE_MODELS = sorted(EXPECTED_STATS)
# rows each model's first run loads (deduplicate models load their deduplicated SELECT)
INITIAL_TOTAL = {m: 4 for m in MERGE_MODELS} | {
    "deduplicate": 3, "deduplicate_identical": 3, "deduplicate_first_load": 3, "composite_key": 3,
}

ERRORS = {
    "err_unknown_strategy": [
        "strategy 'upsrt' is not one of: upsert, insert, update, full_merge, deduplicate"],
    "err_missing_unique_key": ["unique_key is missing or empty", "unique_key='id'"],
    "err_empty_unique_key": ["unique_key is missing or empty"],
    "err_key_not_in_select": ["unique_key column 'id' is not in the model's SELECT",
                              "Add it to the SELECT or fix unique_key"],
    "err_key_not_in_target": ["unique_key column 'code' is not in the target table",
                              "--full-refresh"],
    "err_null_key": ["unique_key column 'id' is NULL in 2 row(s)", "target was not changed"],
    "err_duplicate_key": ["1 unique_key value(s) occur more than once", "(id) = (2)",
                          "strategy='deduplicate'"],
    "err_dedup_tie": ["1 key(s) have different rows that tie on dedup_order_by (version desc)",
                      "(id) = (1)", "tie-breaking column"],
    "err_dedup_no_order": ["2 key(s) have rows that differ and no dedup_order_by is set",
                           "(id) = (1)", "Set dedup_order_by"],
    "err_dedup_order_missing_column": ["dedup_order_by 'revision desc' does not name a column"],
    "err_dedup_order_key_column": ["dedup_order_by column 'id' is part of unique_key"],
    "err_dedup_order_wrong_strategy": ["dedup_order_by is set but strategy is 'upsert'"],
    "err_update_columns_unknown": ["merge_update_columns names column 'balance'"],
    "err_update_and_exclude_columns": [
        "merge_update_columns and merge_exclude_columns are both set"],
    "err_bad_on_schema_change": [
        "on_schema_change 'append' is not one of: ignore, fail, append_new_columns, "
        "sync_all_columns"],
    "err_schema_fail": ["on_schema_change is 'fail'", "new in the SELECT: tier_code"],
    "err_cast_midway": [],  # the engine's own cast/overflow error, raised while writing
    "err_spark_file_format": ["file_format 'parquet' does not support MERGE on Spark",
                              "iceberg, delta, hudi"],
}
SPARK_ONLY = {"err_spark_file_format"}


def dbt(engine: str, *args: str, phase: str = "increment"):
    # one target folder per engine, so switching engines keeps dbt's partial parsing
    extra = [] if args[0] == "deps" else ["--target-path", f"target/{engine}"]
    return run_dbt([*args, *extra], PROJECT, engine, vars={"phase": phase})


class Tables:
    """Read a model's table straight from the engine (same process, same Spark session)."""

    def __init__(self, engine: str, spark=None):
        self.engine = engine
        self.spark = spark

    def read(self, name: str) -> tuple[list[str], list[tuple]]:
        if self.engine == "duckdb":
            import os

            import duckdb

            con = duckdb.connect(os.environ["DBT_MERGE_DUCKDB_PATH"])
            try:
                cur = con.execute(f'select * from "main"."{name}"')
                cols = [d[0] for d in cur.description]
                rows = [tuple(r) for r in cur.fetchall()]
            finally:
                con.close()
        else:
            df = self.spark.table(f"{SCHEMA['spark']}.{name}")
            cols, rows = list(df.columns), [tuple(r) for r in df.collect()]
        return cols, sorted(rows, key=repr)


_RUNS: dict[str, dict] = {}


@pytest.fixture(scope="module", params=ENGINES)
def engine_run(request):
    """Everything the integration project does on one engine, run once per engine."""
    engine = request.param
    spark = request.getfixturevalue("spark") if engine == "spark" else None
    if engine not in _RUNS:
        assert dbt(engine, "deps").success
        assert dbt(engine, "seed", "--full-refresh").success
        first = dbt(engine, "run", "--full-refresh", phase="initial")
        second = dbt(engine, "run", "--exclude", "tag:error_case")
        test = dbt(engine, "test", "--exclude", "tag:error_case")
        run_results = json.loads((PROJECT / f"target/{engine}/run_results.json").read_text())
        third = dbt(engine, "run", "--exclude", "tag:error_case")
        tables = Tables(engine, spark)
        _RUNS[engine] = {
            "engine": engine, "first": first, "second": second, "test": test, "third": third,
            "test_results": run_results, "tables": tables,
            "final": {m: tables.read(m) for m in MERGE_MODELS},
        }
    return _RUNS[engine]


def test_first_run_builds_every_model(engine_run):
    first = engine_run["first"]
    assert first.success, [(r.node.name, r.message) for r in first.results if r.status != "success"]
    for model in MERGE_MODELS:
        total = INITIAL_TOTAL[model]
        assert first.stats(model) == {"inserted": total, "updated": 0, "deleted": 0,
                                      "unchanged": 0, "total": total}, model


@pytest.mark.parametrize("model", MERGE_MODELS)
def test_increment_statistics(engine_run, model):
    assert engine_run["second"].stats(model) == EXPECTED_STATS[model]


def test_statistics_in_adapter_response(engine_run):
    r = engine_run["second"].result("full_merge")
    assert r.adapter_response["code"] == "MERGE"
    assert r.adapter_response["rows_affected"] == 1 + 2 + 1
    assert r.adapter_response["_message"] == (
        "MERGE full_merge: 1 inserted, 2 updated, 1 deleted, 1 unchanged, 4 total")


def test_run_results_json_carries_statistics(engine_run):
    # run_results.json of the `dbt test` is on disk; the merge run's is checked through dbt's
    # own result objects (the same adapter_response dbt serialises).
    second = engine_run["second"]
    for model in MERGE_MODELS:
        msg = second.result(model).adapter_response["_message"]
        for name in STAT_NAMES:
            assert f"{EXPECTED_STATS[model][name]} {name}" in msg


def test_models_equal_expected_and_keys_unique(engine_run):
    results = {r["unique_id"].split(".")[2]: r for r in engine_run["test_results"]["results"]}
    failing = {name: (r["status"], r["failures"]) for name, r in results.items()
               if r["status"] != "pass"}
    # the only failing test is the one meant to fail: 1 duplicate key and 1 NULL key
    assert failing == {"dbt_merge_unique_key_unique_key_violations_id": ("fail", 2)}
    assert len([n for n in results if n.startswith("equal_rows_")]) == len(MERGE_MODELS)


def test_rerunning_the_increment_changes_nothing(engine_run):
    second, third = engine_run["second"], engine_run["third"]
    for model in MERGE_MODELS:
        stats = third.stats(model)
        assert (stats["inserted"], stats["updated"], stats["deleted"]) == (0, 0, 0), model
        assert stats["total"] == second.stats(model)["total"], model


@pytest.mark.spark
def test_duckdb_and_spark_agree(request):
    duck = request.getfixturevalue("spark") and None  # make sure the Spark session exists
    runs = {}
    for engine in ("duckdb", "spark"):
        if engine not in _RUNS:
            pytest.skip("needs both engine runs in this session")
        runs[engine] = _RUNS[engine]
    del duck
    for model in MERGE_MODELS:
        assert runs["duckdb"]["second"].stats(model) == runs["spark"]["second"].stats(model), model
        d_cols, d_rows = runs["duckdb"]["final"][model]
        s_cols, s_rows = runs["spark"]["final"][model]
        assert [c.lower() for c in d_cols] == [c.lower() for c in s_cols], model
        assert d_rows == s_rows, model


def test_full_refresh_rebuilds_from_the_select(engine_run):
    engine = engine_run["engine"]
    run = dbt(engine, "run", "--select", "upsert", "--full-refresh")
    assert run.success
    assert run.stats("upsert") == {"inserted": 4, "updated": 0, "deleted": 0, "unchanged": 0,
                                   "total": 4}
    _, rows = engine_run["tables"].read("upsert")
    assert [r[0] for r in rows] == [2, 3, 4, 5]


@pytest.fixture(scope="module")
def error_models_loaded(engine_run):
    engine = engine_run["engine"]
    first = dbt(engine, "run", "--select", "tag:error_case", phase="initial")
    assert first.success, [(r.node.name, r.message) for r in first.results]
    return engine_run


@pytest.mark.parametrize("model", sorted(ERRORS))
def test_bad_input_fails_clearly_and_leaves_target_unchanged(error_models_loaded, model):
    engine = error_models_loaded["engine"]
    if model in SPARK_ONLY and engine != "spark":
        pytest.skip("Spark-only check")
    tables = error_models_loaded["tables"]
    before = tables.read(model)
    run = dbt(engine, "run", "--select", model)
    assert not run.success
    message = run.error(model)
    for fragment in ERRORS[model]:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    if ERRORS[model]:
        assert f"dbt_merge: model '{model}'" in message
    assert tables.read(model) == before
