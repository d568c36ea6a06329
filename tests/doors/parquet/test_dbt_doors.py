"""`location` models (dbt-duckdb, in-process) against issue 30's dataset classes:

- item 17: several location models sharing a new merge_history_table under --threads 4 failed
  with `Catalog write-write conflict` (the job created the table inside the model's open
  transaction; the fix tables got, dbt_merge.duckdb.history, was skipped);
- a new class: a pre-hook returning rows (`select 1`) left an unfinished result on the model's
  connection, and every location model failed with DuckDB's `Resource In Use Error`;
- item 12: a history table that cannot be written failed the model with DuckDB's raw error
  after the dataset was published, and a failing post-hook left a history row for a merge that
  was not published;
- item 14: soft deletes started on an existing dataset (append_new_columns), one deletion time;
- item 16: a dry run on a new location writes nothing anywhere; another writer's file written
  just before the swap fails the model with the dataset as that writer left it.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dbt_helpers import run_dbt
from dbt_merge.parquet import commit
from support.harness import PROFILES_DIR, make_project, model_sql

from .datasets import fingerprint, read_dataset

SCHEMA = "pq_doors"  # this module's models only
MODELS = 6


@pytest.fixture
def db():
    con = duckdb.connect(os.environ["DBT_MERGE_DUCKDB_PATH"])
    con.execute("create schema if not exists pq_src")
    con.execute(f"create schema if not exists {SCHEMA}")
    yield con
    con.close()


def rows(root: Path) -> list[tuple]:
    _, got = read_dataset(root)
    return sorted(tuple(r.values()) for r in got)


def test_models_sharing_a_new_history_table_under_threads(tmp_path, db):
    """Six location models, one new history table, --threads 4: each model's pre-hook opens
    its transaction before the job runs (a `set`, or a `select` whose rows nobody fetches)."""
    db.execute(
        "create or replace table pq_src.shared as select range as id, 'v' as v from range(3)"
    )
    db.execute(f"drop table if exists {SCHEMA}.shared_history")
    hooks = ["set enable_progress_bar = false", "select 1"]
    models = {
        f"shared_{i}": model_sql(
            {
                "unique_key": "id",
                "location": str(tmp_path / f"ds_{i}"),
                "schema": SCHEMA,
                "merge_history_table": "shared_history",
                "pre_hook": hooks[i % 2],
            },
            "select * from pq_src.shared",
        )
        for i in range(MODELS)
    }
    proj = make_project(tmp_path / "proj", "parquet_doors", models)
    for run_number in (1, 2):
        run = run_dbt(["run", "--threads", "4"], proj, "duckdb", PROFILES_DIR)
        errors = [r.message for r in run.results if str(r.status) != "success"]
        assert run.success, errors
        history = db.execute(
            f"select count(*), count(distinct model_unique_id) from {SCHEMA}.shared_history"
        ).fetchone()
        assert history == (MODELS * run_number, MODELS)
        first = "v" if run_number == 1 else "w"
        for i in range(MODELS):
            assert rows(tmp_path / f"ds_{i}") == [(0, first), (1, "v"), (2, "v")]
        db.execute("update pq_src.shared set v = 'w' where id = 0")
    updated = db.execute(
        f"select sum(updated), sum(inserted) from {SCHEMA}.shared_history"
    ).fetchone()
    assert updated == (MODELS, 3 * MODELS)


def test_a_history_table_that_cannot_be_written_fails_before_the_publish(tmp_path, db):
    db.execute(
        "create or replace table pq_src.hist_src as select range as id, 'v' as v from range(3)"
    )
    db.execute(f"create or replace view {SCHEMA}.not_a_table as select 1 as x")
    db.execute(f"create or replace table {SCHEMA}.wrong_history (x int)")
    db.execute(f"drop table if exists {SCHEMA}.hooked_history")
    base = {"unique_key": "id", "schema": SCHEMA}
    body = "select * from pq_src.hist_src"
    first = {
        name: model_sql({**base, "location": str(tmp_path / name)}, body)
        for name in ("h_view", "h_columns", "h_hooked")
    }
    proj = make_project(tmp_path / "proj", "parquet_doors", first)
    assert run_dbt(["run"], proj, "duckdb", PROFILES_DIR).success
    before = {name: fingerprint(tmp_path / name) for name in first}
    db.execute("update pq_src.hist_src set v = 'new' where id = 1")
    failing_hook = (
        "select case when (select count(*) from {{ this }}) > 0 then error('hook says no') end"
    )
    second = {
        "h_view": model_sql(
            {**base, "location": str(tmp_path / "h_view"), "merge_history_table": "not_a_table"},
            body,
        ),
        "h_columns": model_sql(
            {
                **base,
                "location": str(tmp_path / "h_columns"),
                "merge_history_table": "wrong_history",
            },
            body,
        ),
        "h_hooked": model_sql(
            {
                **base,
                "location": str(tmp_path / "h_hooked"),
                "merge_history_table": "hooked_history",
                "post_hook": failing_hook,
            },
            body,
        ),
    }
    make_project(tmp_path / "proj", "parquet_doors", second)
    run = run_dbt(["run"], proj, "duckdb", PROFILES_DIR)
    assert "merge_history_table 'not_a_table' names a view" in run.error("h_view")
    assert "is not a merge history table: it lacks the column(s) model_unique_id" in run.error(
        "h_columns"
    )
    assert "hook says no" in run.error("h_hooked")
    for name in first:
        assert fingerprint(tmp_path / name) == before[name], name
    assert db.execute(f"select * from {SCHEMA}.wrong_history").fetchall() == []
    # the hooked model's history table exists (created on first use) but holds no row: the
    # merge was not published
    assert db.execute(f"select count(*) from {SCHEMA}.hooked_history").fetchone() == (0,)


def test_soft_deletes_dry_runs_and_another_writer(tmp_path, db, monkeypatch):
    db.execute(
        "create or replace table pq_src.soft_src as select range as id, 'v' as v from range(6)"
    )
    base = {"unique_key": "id", "schema": SCHEMA, "rows_per_file": 2}
    body = "select * from pq_src.soft_src"
    soft = {
        "strategy": "full_merge",
        "soft_delete_column": "gone",
        "soft_delete_timestamp_column": "gone_at",
        "on_schema_change": "append_new_columns",
        "max_delete_fraction": 1,
    }
    first = {"s_soft": model_sql({**base, "location": str(tmp_path / "s_soft")}, body)}
    first["s_other"] = model_sql({**base, "location": str(tmp_path / "s_other")}, body)
    proj = make_project(tmp_path / "proj", "parquet_doors", first)
    assert run_dbt(["run"], proj, "duckdb", PROFILES_DIR).success
    other_before = fingerprint(tmp_path / "s_other")
    db.execute("delete from pq_src.soft_src where id >= 2")
    fresh = tmp_path / "new" / "parents" / "s_dry"
    second = {
        "s_soft": model_sql({**base, **soft, "location": str(tmp_path / "s_soft")}, body),
        "s_dry": model_sql({**base, "location": str(fresh), "dry_run": True}, body),
        "s_other": model_sql(
            {**base, "location": str(tmp_path / "s_other")},
            "select id, v || 'x' as v from pq_src.soft_src",
        ),
    }
    make_project(tmp_path / "proj", "parquet_doors", second)
    intruder = tmp_path / "s_other" / "other-tool.parquet"
    publishing: list[Path] = []
    publish = commit.publish

    def watched(tx, plan, **kwargs):
        publishing.append(tx.root)
        return publish(tx, plan, **kwargs)

    def checkpoint(name: str) -> None:
        # another tool writes into s_other just before its swap
        if name == "before_swap" and publishing[-1].name == "s_other":
            pq.write_table(pa.table({"id": pa.array([50]), "v": ["theirs"]}), intruder)

    monkeypatch.setattr(commit, "checkpoint", checkpoint)
    monkeypatch.setattr(commit, "publish", watched)
    run = run_dbt(["run"], proj, "duckdb", PROFILES_DIR)
    assert run.stats("s_soft") == {
        "inserted": 0,
        "updated": 2,
        "deleted": 4,
        "unchanged": 0,
        "total": 6,
    }
    _, got = read_dataset(tmp_path / "s_soft")
    assert sorted(r["id"] for r in got if r["gone"]) == [2, 3, 4, 5]
    assert len({r["gone_at"] for r in got if r["gone"]}) == 1
    assert "DRY RUN" in run.result("s_dry").adapter_response["_message"]
    assert not (tmp_path / "new").exists()
    message = run.error("s_other")
    assert "another writer" in message and "other-tool.parquet" in message, message
    after = fingerprint(tmp_path / "s_other")
    assert after.pop("other-tool.parquet") and after == other_before
