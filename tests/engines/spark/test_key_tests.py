"""Spark: a SELECT that repeats a unique_key is refused, with the check's own message and the
target left as it was, whichever step tests the keys: the source check (a small source, the
default at this size: the count is a left join), or the count of a source Spark estimates too
large to broadcast (count_tests_keys: a full outer join, and the check skips its
count(distinct); forced by the var dbt_merge_spark_full_join_bytes=0). A key repeated among the
rows that match a target row and one repeated among the new rows are caught by different tests
of the full join, so each has a model, and a composite key has one; a key the target holds
twice is still the count's own error, and a clean merge is counted as before.
"""

from __future__ import annotations

import pytest
from dbt_helpers import run_dbt
from support.harness import PROFILES_DIR
from support.scenario import ENGINES, IDS, message, project, rows_sql

SPARK_ENGINES = ENGINES[1:]

TARGET = ["(1, 'a')", "(2, 'b')", "(3, 'c')"]
REPEATED = "unique_key value(s) occur more than once in the model's SELECT, e.g. (id) = "
MODELS = {
    # model: (target rows, SELECT rows, what the run says)
    "k_matched": (TARGET, [("1", "'x'"), ("1", "'y'"), ("2", "'b'")],
                  "1 " + REPEATED + "(1)"),
    "k_new": (TARGET, [("4", "'x'"), ("4", "'y'"), ("1", "'a'")],
              "1 " + REPEATED + "(4)"),
    "k_both": (TARGET, [("2", "'x'"), ("2", "'y'"), ("5", "'x'"), ("5", "'y'"), ("6", "'z'")],
               "2 " + REPEATED + "(2)"),
    "k_target": (["(1, 'a')", "(1, 'a2')", "(2, 'b')"], [("1", "'x'"), ("2", "'b'")],
                 "already holds 1 extra row(s) for keys of the SELECT, e.g. (id) = (1)"),
    "k_clean": (TARGET, [("1", "'a'"), ("2", "'z'"), ("5", "'n'")],
                "1 inserted, 1 updated, 0 deleted, 1 unchanged, 4 total"),
}
#: a composite key (a, b), repeated among matched rows and among new ones
PAIRS = "cast({} as bigint) as a, cast({} as string) as b, cast({} as string) as name"
PAIR_TARGET = ["(1, 'x', 'p')", "(1, 'y', 'q')", "(2, 'x', 'r')"]
PAIR_ROWS = [("1", "'x'", "'p2'"), ("1", "'x'", "'p3'"), ("1", "'y'", "'q'"),
             ("7", "'z'", "'n'"), ("7", "'z'", "'m'")]


@pytest.mark.parametrize("full_join", [False, True], ids=["left_join", "full_join"])
@pytest.mark.parametrize("db", SPARK_ENGINES, indirect=True)
def test_repeated_keys_are_refused_by_the_count(db, tmp_path, full_join):
    s = f"keytests_{db.name}_{int(full_join)}"
    db.engine.setup(s)
    models = {}
    for model, (target, rows, _) in MODELS.items():
        db.sql(f"drop table if exists {s}.{model}")
        db.sql(f"create table {s}.{model} (id bigint, name string) using iceberg")
        db.sql(f"insert into {s}.{model} values " + ", ".join(target))
        models[model] = ({"schema": s, "unique_key": "id"}, rows_sql(IDS, rows))
    db.sql(f"drop table if exists {s}.k_pairs")
    db.sql(f"create table {s}.k_pairs (a bigint, b string, name string) using iceberg")
    db.sql(f"insert into {s}.k_pairs values " + ", ".join(PAIR_TARGET))
    models["k_pairs"] = ({"schema": s, "unique_key": ["a", "b"]}, rows_sql(PAIRS, PAIR_ROWS))
    root = project(db, tmp_path, "keytests", models)
    run = run_dbt(["run"], root, db.name, PROFILES_DIR,
                  vars={"dbt_merge_spark_full_join_bytes": 0} if full_join else None)
    for model, (target, _rows, said) in MODELS.items():
        assert said in message(run, model), (model, message(run, model))
        if model != "k_clean":
            assert "The target was not changed." in message(run, model)
            before = sorted(tuple(r.strip("()").replace("'", "").split(", ")) for r in target)
            assert sorted((str(i), n) for i, n in db.rows(s, model)) == before, model
    said = message(run, "k_pairs")
    assert "2 " + REPEATED.replace("(id)", "(a, b)") + "(1, x)" in said, said
    assert sorted((str(a), b, n) for a, b, n in db.rows(s, "k_pairs")) == sorted(
        tuple(r.strip("()").replace("'", "").split(", ")) for r in PAIR_TARGET)
