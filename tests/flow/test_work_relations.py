"""A run leaves none of its work relations behind: the staged SELECT, the deduplicate candidates
and the changes are dropped (and, on Spark, uncached) in every path: first run, narrow and wide
changes, deduplicate with identical repeats.

DuckDB's temp tables die with dbt's connection, so a post-hook (which runs after the drops, on
the model's connection) records any that are left into a table the test reads. Spark's temp
views live in the SparkSession the test shares with dbt, so the test lists them after the run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dbt_helpers import run_dbt
from support.catalogue import SOURCE_ROWS, T0, TARGET_COLS, TARGET_ROWS
from support.harness import PROFILES_DIR, DuckEngine, SparkEngine, make_project, model_sql

SCHEMA = "rel_work"
REPEATS = [*SOURCE_ROWS, dict(SOURCE_ROWS[0]), {**SOURCE_ROWS[1], "updated_at": T0}]
MODELS = {
    # model: (config, source rows, target exists before the run)
    "wr_first_run": ({"strategy": "upsert"}, SOURCE_ROWS, False),
    "wr_upsert": ({"strategy": "upsert"}, SOURCE_ROWS, True),
    "wr_update_columns": ({"strategy": "full_merge", "merge_update_columns": ["name"]},
                          SOURCE_ROWS, True),
    "wr_dedupe": ({"strategy": "deduplicate", "dedup_order_by": "updated_at desc"}, REPEATS, True),
}
#: Spark: a run refused after its changes were classified and counted (full_merge would delete
#: 1 of 2 rows) leaves nothing behind either (the SELECT, converted and changes views were cached)
REFUSED = {
    "wr_refused": ({"strategy": "full_merge", "max_delete_fraction": 0},
                   [{**r, "amount": r["amount"] / 2} for r in SOURCE_ROWS], True),
}
LEFTOVERS = "wr_leftovers"
DUCKDB_LEFTOVERS_HOOK = (
    f"insert into {SCHEMA}.{LEFTOVERS}"
    " select '{{ this.name }}', table_name from duckdb_tables()"
    " where temporary and contains(table_name, '__dbt_merge')"
    " union all select '{{ this.name }}', view_name from duckdb_views()"
    " where temporary and contains(view_name, '__dbt_merge')"
)


def _run(engine, tmp: Path):
    engine.setup(SCHEMA, SCHEMA + "_src")
    models = {}
    cases = {**MODELS, **(REFUSED if engine.name == "spark" else {})}
    for name, (config, rows, exists) in cases.items():
        engine.drop(SCHEMA, name)
        if exists:
            engine.create(SCHEMA, name, TARGET_COLS, TARGET_ROWS)
        source = engine.source(SCHEMA + "_src", f"s_{name}", TARGET_COLS, rows)
        cfg = {**config, "unique_key": "id", "schema": SCHEMA}
        if engine.name == "spark":
            cfg["file_format"] = "iceberg"
        else:
            cfg["post_hook"] = DUCKDB_LEFTOVERS_HOOK
        models[name] = model_sql(cfg, f"select * from {source}")
    project = make_project(tmp / f"work_{engine.name}", f"work_{engine.name}", models)
    return run_dbt(["run"], project, engine.name, PROFILES_DIR)


def _assert_all_merged(run) -> None:
    for name in MODELS:
        run.stats(name)  # raises when the model failed or reported no statistics


def test_no_work_relations_left_duckdb(tmp_path):
    with DuckEngine() as engine:
        engine.setup(SCHEMA)
        engine.con.execute(f"create or replace table {SCHEMA}.{LEFTOVERS} (model text, name text)")
        run = _run(engine, tmp_path)
        _assert_all_merged(run)
        assert engine.con.execute(f"select * from {SCHEMA}.{LEFTOVERS}").fetchall() == []


@pytest.mark.spark
def test_no_work_relations_left_spark(spark, tmp_path):
    cached_before = spark.sparkContext._jsc.getPersistentRDDs().size()
    run = _run(SparkEngine(spark), tmp_path)
    _assert_all_merged(run)
    refusal = run.error("wr_refused")
    assert "full_merge would delete 1 of the 2 target rows" in refusal, refusal
    # only this test's models: a model that failed in another test of this session (on an
    # engine's error, not a refusal of the package) may keep its work views
    views = [t.name for t in spark.catalog.listTables() if t.isTemporary]
    assert [v for v in views if v.startswith("wr_") and "__dbt_merge" in v] == []
    assert spark.sparkContext._jsc.getPersistentRDDs().size() == cached_before
