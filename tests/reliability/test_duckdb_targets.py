"""DuckDB tables (issue 21): time zones in keys and values, a merge_history_table shared under
--threads or placed in another database, and targets with constraints. Rows, statistics,
messages, and the target as it was on refusal."""

from __future__ import annotations

import pytest

from .scenario import Db, dbt, message, project

ZONES = ["UTC", "America/New_York", "Asia/Kolkata"]


@pytest.fixture
def duck():
    db = Db("duckdb")
    yield db
    db.close()


def _target(db: Db, schema: str, name: str, select: str) -> None:
    db.sql(f"drop schema if exists {schema} cascade")
    db.sql(f"create schema {schema}")
    db.sql(f"create table {schema}.{name} as {select}")


# ------------------------------------------------------------- class 3: time zones

ZONED = "timestamptz '2024-01-01 12:00:00+00'"
NAIVE = "timestamp '2024-01-01 12:00:00'"


TZ_CASES = {
    "key_naive_into_zoned": (
        f"select {ZONED} as k, {ZONED} as at, 'a' as v",
        f"select {NAIVE} as k, {ZONED} as at, 'b' as v",
        "unique_key column 'k' is timestamp in the SELECT but timestamp with time zone in the "
        "target: they match only through the session time zone"),
    "key_zoned_into_naive": (
        f"select {NAIVE} as k, {NAIVE} as at, 'a' as v",
        f"select {ZONED} as k, {NAIVE} as at, 'b' as v",
        "unique_key column 'k' is timestamp with time zone in the SELECT but timestamp in the "
        "target"),
    "value_naive_into_zoned": (
        f"select 1 as k, {ZONED} as at, 'a' as v", f"select 1 as k, {NAIVE} as at, 'b' as v",
        "column 'at' is timestamp in the SELECT but timestamp with time zone in the target: its "
        "values are converted through the session time zone"),
    "value_zoned_into_date": (
        "select 1 as k, date '2024-01-01' as at, 'a' as v",
        f"select 1 as k, {ZONED} as at, 'b' as v",
        "column 'at' is timestamp with time zone in the SELECT but date in the target"),
}


def test_mixed_time_zone_columns_are_refused_in_every_zone(duck, tmp_path):
    """Each case under each session time zone (dbt-duckdb's TimeZone, set by a pre-hook)."""
    s = "duck_tz_refused"
    duck.sql(f"drop schema if exists {s} cascade")
    duck.sql(f"create schema {s}")
    models, expected = {}, {}
    for case, (target_select, select, excerpt) in TZ_CASES.items():
        for i, zone in enumerate(ZONES):
            model = f"{case}_{i}"
            duck.sql(f"create table {s}.{model} as {target_select}")
            cfg = {"schema": s, "unique_key": "k", "pre_hook": f"set TimeZone = '{zone}'"}
            models[model] = (cfg, select)
            expected[model] = (excerpt, duck.rows(s, model))
    run = dbt(duck, project(duck, tmp_path, "tz_refused", models), "run")
    for model, (excerpt, before) in expected.items():
        text = " ".join(run.error(model).split())
        assert f"dbt_merge: model '{model}': " + excerpt in text, text
        assert "at time zone 'UTC'" in text and "The target was not changed." in text
        assert duck.rows(s, model) == before


def test_stating_the_time_zone_merges_alike_in_every_zone(duck, tmp_path):
    """The fix the message names: the key converted with an explicit zone matches the same row
    whatever the session's zone."""
    s = "duck_tz_stated"
    duck.sql(f"drop schema if exists {s} cascade")
    duck.sql(f"create schema {s}")
    select = (f"select {NAIVE} at time zone 'UTC' as k, 'b' as v union all "
              f"select timestamp '2024-06-01 08:30:00' at time zone 'UTC', 'c'")
    models = {}
    for i, zone in enumerate(ZONES):
        duck.sql(f"create table {s}.m_{i} as select {ZONED} as k, 'a' as v")
        cfg = {"schema": s, "unique_key": "k", "pre_hook": f"set TimeZone = '{zone}'"}
        models[f"m_{i}"] = (cfg, select)
    run = dbt(duck, project(duck, tmp_path, "tz_stated", models), "run")
    for model in models:
        assert message(run, model) == (
            "MERGE upsert: 1 inserted, 1 updated, 0 deleted, 0 unchanged, 2 total")
        got = duck.sql(f"select epoch(k), v from {s}.{model} order by 1")
        assert got == [(1704110400.0, "b"), (1717230600.0, "c")], (model, got)


# ------------------------------------------------------------- classes 8, 10: merge_history_table


def test_models_sharing_a_new_history_table_under_threads(duck, tmp_path):
    """First use of one history table by four models at once: each merge commits and writes its
    row (DuckDB refused the second CREATE of the table with `Catalog write-write conflict`)."""
    s = "duck_history_threads"
    duck.sql(f"drop schema if exists {s} cascade")
    duck.sql(f"create schema {s}")
    models = {}
    for i in range(4):
        duck.sql(f"create table {s}.m{i} as select 1::bigint as id, 'a' as v")
        models[f"m{i}"] = ({"schema": s, "unique_key": "id", "merge_history_table": "shared"},
                           f"select 1::bigint as id, 'b{i}' as v union all select 2, 'new'")
    run = dbt(duck, project(duck, tmp_path, "history_threads", models), "run", "--threads", "4")
    for i in range(4):
        assert message(run, f"m{i}") == (
            "MERGE upsert: 1 inserted, 1 updated, 0 deleted, 0 unchanged, 2 total")
        assert duck.rows(s, f"m{i}") == [(1, f"b{i}"), (2, "new")]
    history = duck.sql(f"select model_unique_id, inserted, updated, total from {s}.shared")
    assert sorted(history) == [(f"model.history_threads_duckdb.m{i}", 1, 1, 2) for i in range(4)]


def test_history_table_in_another_database_is_refused(duck, tmp_path):
    s = "duck_history_other_db"
    _target(duck, s, "m", "select 1::bigint as id, 'a' as v")
    cfg = {"schema": s, "unique_key": "id", "merge_history_table": "elsewhere.main.history"}
    model = {"m": (cfg, "select 1::bigint as id, 'b' as v")}
    run = dbt(duck, project(duck, tmp_path, "history_db", model), "run")
    text = " ".join(run.error("m").split())
    assert ("dbt_merge: model 'm': merge_history_table 'elsewhere.main.history' is in the "
            "database 'elsewhere', but the model's table is in 'integration_tests': DuckDB writes "
            "the history row in the merge's own transaction") in text, text
    assert "Put the history table in 'integration_tests'" in text
    assert duck.rows(s, "m") == [(1, "a")]
