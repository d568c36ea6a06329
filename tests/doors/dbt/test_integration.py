"""The integration_tests dbt project on DuckDB and Spark/Iceberg (in-process, and over a Thrift
server in front of a standalone cluster), driven in-process.

Per engine: seed, first run (initial state), second run (the increment), `dbt test` (every model
equals its *_expected seed, keys unique), then the increment again (idempotence). Error models
(tag error_case) get a good first run, then a bad second run that must fail with a clear message
and leave the target exactly as it was.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from dbt_helpers import STAT_NAMES, run_dbt

ROOT = Path(__file__).resolve().parents[3]
PROJECT = ROOT / "integration_tests"
SCHEMA = {"duckdb": "main", "spark": "analytics", "spark_thrift": "analytics"}
ENGINES = [
    "duckdb",
    pytest.param("spark", marks=pytest.mark.spark),
    pytest.param("spark_thrift", marks=[pytest.mark.spark, pytest.mark.thrift]),
]

EXPECTED_STATS = {
    row["model"]: {k: int(row[k]) for k in STAT_NAMES}
    for row in csv.DictReader(open(PROJECT / "seeds/expected/merge_stats_expected.csv"))
}
MERGE_MODELS = sorted(EXPECTED_STATS)
DRY_RUN_MODELS = {"dry_run"}
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
    "err_spark_file_format": ["file_format 'csv' is not supported on Spark",
                              "iceberg, delta, hudi", "parquet, orc, hive"],
}
SPARK_ONLY = {"err_spark_file_format"}


def dbt(engine: str, *args: str, phase: str = "increment", write_json: bool = False):
    # one target folder per engine, so switching engines keeps dbt's partial parsing
    extra = [] if args[0] == "deps" else ["--target-path", f"target/{engine}"]
    return run_dbt([*args, *extra], PROJECT, engine, vars={"phase": phase},
                   write_json=write_json)


class Tables:
    """Read a model's table straight from the engine (same process, same Spark session; over
    thrift, through a connection of our own)."""

    def __init__(self, engine: str, spark=None, thrift_port: int | None = None):
        self.engine = engine
        self.spark = spark
        self.thrift = None
        if thrift_port is not None:
            from support.harness import ThriftEngine

            self.thrift = ThriftEngine(thrift_port)

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
        elif self.thrift is not None:
            cols, rows = self.thrift.table(f"{SCHEMA[self.engine]}.{name}")
        else:
            df = self.spark.table(f"{SCHEMA['spark']}.{name}")
            cols, rows = list(df.columns), [tuple(r) for r in df.collect()]
        return cols, sorted(rows, key=repr)


_RUNS: dict[str, dict] = {}
_ERROR_MESSAGES: dict[str, dict[str, str]] = {}  # engine -> model -> message of its bad run


@pytest.fixture(scope="module", params=ENGINES)
def engine_run(request):
    return _engine_run(request, request.param)


def _engine_run(request, engine: str) -> dict:
    """Everything the integration project does on one engine, run once per engine."""
    spark = request.getfixturevalue("spark") if engine == "spark" else None
    thrift_port = request.getfixturevalue("thrift") if engine == "spark_thrift" else None
    if engine not in _RUNS:
        assert dbt(engine, "deps").success
        assert dbt(engine, "seed", "--full-refresh").success
        first = dbt(engine, "run", "--full-refresh", phase="initial")
        second = dbt(engine, "run", "--exclude", "tag:error_case", write_json=True)
        # the increment's run_results.json and manifest.json, for `dbt-merge report`
        kept = request.getfixturevalue("state_dir") / "run_results" / engine
        kept.mkdir(parents=True, exist_ok=True)
        for name in ("run_results.json", "manifest.json"):
            shutil.copy(PROJECT / f"target/{engine}/{name}", kept / name)
        test = dbt(engine, "test", "--exclude", "tag:error_case", write_json=True)
        run_results = json.loads((PROJECT / f"target/{engine}/run_results.json").read_text())
        third = dbt(engine, "run", "--exclude", "tag:error_case")
        tables = Tables(engine, spark, thrift_port)
        _RUNS[engine] = {
            "engine": engine, "first": first, "second": second, "test": test, "third": third,
            "test_results": run_results, "tables": tables, "second_files": kept,
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


def test_report_of_the_increment(engine_run, tmp_path):
    """`dbt-merge report` on the increment's real run_results.json: one row per merge model with
    the counts dbt reported, the dry-run model marked, the strategies from the manifest."""
    from dbt_merge.cli import main
    from dbt_merge.report import load_report

    report = load_report(engine_run["second_files"] / "run_results.json")
    rows = {r.model: r for r in report.merges}
    assert sorted(rows) == MERGE_MODELS
    manifest = json.loads((engine_run["second_files"] / "manifest.json").read_text())
    for model, row in rows.items():
        config = manifest["nodes"][f"model.dbt_merge_integration_tests.{model}"]["config"]
        assert (row.status, row.strategy, dict(row.counts), row.dry_run, row.skipped) == (
            "success", config.get("strategy", "upsert"), EXPECTED_STATS[model],
            model in DRY_RUN_MODELS, None), model
        assert row.held_back == (1 if model == "conditional_update" else None), model
    assert [(n.resource_type, n.status) for n in report.others] == [("model", "success")]

    out = tmp_path / "summary.md"
    out.write_text("before\n")
    assert main(["report", str(engine_run["second_files"] / "run_results.json"),
                 "--output", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("before\n### dbt-merge: merge statistics\n")  # appended
    assert "**DRY RUN** for 1 model (nothing written); the others wrote their changes." in text
    table = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(table) == len(MERGE_MODELS)
    assert "| `upsert` | success | upsert | 1 | 2 | 0 | 1 | 5 |  |  |  |" in table
    assert "| `conditional_update` | success | upsert | 1 | 1 | 0 | 1 | 5 | 1 |  |  |" in table
    assert "| `dry_run` | success | upsert | 1 | 2 | 0 | 1 | 5 |  |  | yes |" in table
    assert "failed" not in text


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
        if model in DRY_RUN_MODELS:  # wrote nothing: the same counts again
            assert third.stats(model) == second.stats(model), model
            continue
        stats = third.stats(model)
        assert (stats["inserted"], stats["updated"], stats["deleted"]) == (0, 0, 0), model
        assert stats["total"] == second.stats(model)["total"], model


def _messages(run) -> dict[str, str]:
    return {r.node.name: r.adapter_response.get("_message") or r.message for r in run.results}


@pytest.mark.spark
@pytest.mark.parametrize("one, other", [
    ("duckdb", "spark"),
    pytest.param("spark", "spark_thrift", marks=pytest.mark.thrift),
])
def test_engines_agree(request, one, other):
    """Same statistics and rows on every engine; Spark over thrift also reports exactly what the
    in-process session does (every model's message of every run)."""
    a, b = _engine_run(request, one), _engine_run(request, other)
    for model in MERGE_MODELS:
        assert a["second"].stats(model) == b["second"].stats(model), model
        a_cols, a_rows = a["final"][model]
        b_cols, b_rows = b["final"][model]
        assert [c.lower() for c in a_cols] == [c.lower() for c in b_cols], model
        assert a_rows == b_rows, model
    if one == "spark":
        for run in ("first", "second", "third"):
            assert _messages(a[run]) == _messages(b[run]), run


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
    if model in SPARK_ONLY and engine == "duckdb":
        pytest.skip("Spark-only check")
    tables = error_models_loaded["tables"]
    before = tables.read(model)
    run = dbt(engine, "run", "--select", model)
    assert not run.success
    message = run.error(model)
    _ERROR_MESSAGES.setdefault(engine, {})[model] = message
    for fragment in ERRORS[model]:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    if ERRORS[model]:
        assert f"dbt_merge: model '{model}'" in message
        if engine == "spark_thrift" and model in _ERROR_MESSAGES.get("spark", {}):
            # word for word what the in-process session reports (the session engine's runs
            # come first when both are selected)
            assert message == _ERROR_MESSAGES["spark"][model]
    assert tables.read(model) == before


# The project once more on Spark, with every model a parquet table partitioned by updated_at
# (merged by partition overwrite) in a schema of its own, chosen through the project's vars.
PARQUET_VARS = {"spark_file_format": "parquet", "spark_partition_by": "updated_at",
                "spark_schema": "parquet"}
PARQUET_SCHEMA = "analytics_parquet"
#: Spark cannot drop or retype a parquet table's columns: refused, the target unchanged
#: and the partition rewrite has no conditional updates, condition deletes or soft deletes
UNSUPPORTED = "is not supported yet on tables without MERGE INTO"
PARQUET_REFUSED = {"schema_sync": "on_schema_change 'sync_all_columns' cannot be applied to",
                   "conditional_update": "merge_update_condition " + UNSUPPORTED,
                   "soft_delete": "soft_delete_column " + UNSUPPORTED}
#: no updated_at column to partition by (its refusal is the same check as the two above)
PARQUET_LEFT_OUT = {"cdc_delete"}
PARQUET_MODELS = [m for m in MERGE_MODELS if m not in PARQUET_LEFT_OUT]


@pytest.mark.spark
def test_spark_parquet_tables(spark):
    def run(*args: str, phase: str = "increment"):
        extra = [] if args[0] == "deps" else ["--target-path", "target/spark_parquet"]
        return run_dbt([*args, *extra], PROJECT, "spark", vars={"phase": phase, **PARQUET_VARS})

    assert run("deps").success and run("seed").success
    skip = ["--exclude", "tag:error_case", *PARQUET_LEFT_OUT]
    first = run("run", "--full-refresh", *skip, phase="initial")
    assert first.success, [(r.node.name, r.message) for r in first.results if r.status != "success"]
    for model in PARQUET_MODELS:
        info = {r.col_name: r.data_type
                for r in spark.sql(f"describe table extended {PARQUET_SCHEMA}.{model}").collect()}
        assert info["Provider"] == "parquet" and "# Partition Information" in info, model
    tables = {m: spark.table(f"{PARQUET_SCHEMA}.{m}").collect() for m in PARQUET_REFUSED}
    second = run("run", *skip)
    for model in PARQUET_MODELS:
        if model in PARQUET_REFUSED:
            assert PARQUET_REFUSED[model] in second.error(model)
            spark.sql(f"refresh table {PARQUET_SCHEMA}.{model}")
            after = spark.table(f"{PARQUET_SCHEMA}.{model}").collect()
            assert sorted(after, key=repr) == sorted(tables[model], key=repr), model
        else:
            assert second.stats(model) == EXPECTED_STATS[model], model
    run("test", *skip, "--write-json")
    results = json.loads((PROJECT / "target/spark_parquet/run_results.json").read_text())
    failing = {r["unique_id"].split(".")[2]: (r["status"], r["failures"])
               for r in results["results"] if r["status"] != "pass"}
    expected_failures = {n for n in failing if any(m in n for m in PARQUET_REFUSED)}
    assert {n: f for n, f in failing.items() if n not in expected_failures} == {
        "dbt_merge_unique_key_unique_key_violations_id": ("fail", 2)}
