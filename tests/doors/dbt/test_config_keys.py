"""A merge model's config key that nothing reads: a misspelling of a key the merge or dbt reads
(within edit distance 2: `stratgy`, `unique_keys`) fails the model before anything runs, with
the key and the fix, and is checked before the required keys (so `unique_keys` says what is
wrong, not that unique_key is missing); a key far from every known one is a warning naming the
model and the key (--warn-error makes it an error), wherever it was set (config(),
dbt_project.yml, schema.yml); ordinary dbt and adapter keys say nothing."""

from __future__ import annotations

import pytest
import yaml
from dbt_helpers import run_dbt
from support.harness import PROFILES_DIR, DuckEngine, make_project

SCHEMA = "cfg_keys"
SELECT = "select {{ var('v', 1) }} as id, 'a' as name"


def _model(config: str = "", key: str = "unique_key='id', ") -> str:
    return (
        "{{ config(materialized='merge', " + key + "schema='" + SCHEMA + "'"
        + (", " + config if config else "") + ") }}\n" + SELECT + "\n"
    )


MODELS = {
    "ck_typo": _model("merge_update_conditon='name is not null'"),
    "ck_stratgy": _model("stratgy='full_merge'"),
    "ck_unique_keys": _model("unique_keys='id'", key=""),
    "ck_case": _model("Strategy='insert'"),
    "ck_dbt_key": _model("contrat={'enforced': true}"),  # dbt's own contract
    "ck_no_match": _model("owner_team='finance'"),
    "ck_far": _model("dedup_ordering='name'"),  # 3 edits from dedup_order_by
    "ck_project": _model(),  # its typo is set in dbt_project.yml
    "ck_yaml": _model(),  # its typo is set in schema.yml
    # ordinary dbt keys, and keys of the other adapter: no warning
    "ck_ordinary": (
        "{{ config(materialized='merge', unique_key='id', schema='" + SCHEMA + "',"
        " alias='ck_ordinary', tags=['t'], meta={'owner': 'x'}, enabled=true, full_refresh=false,"
        " persist_docs={'relation': false}, docs={'show': true}, grants={},"
        " contract={'enforced': false}, pre_hook='select 1', post_hook=['select 2'],"
        " on_schema_change='ignore', incremental_strategy='merge', tblproperties={'a': 'b'},"
        " location_root='/tmp/nowhere', clustered_by='id', buckets=none, indexes=[],"
        " compression='zstd', rows_per_file=10) }}\n"  # a location model's file options
        "{% call set_sql_header(config) %}select 1;{% endcall %}\n" + SELECT + "\n"
    ),
}
PROJECT_MODELS = {
    "ck_project": {"+dedup_order_bi": "name"},
    "ck_ordinary": {"+tags": ["p"], "+materialized": "merge", "+schema": SCHEMA,
                    "+file_format": None, "+meta": {"team": "y"}},
}
SCHEMA_YML = {
    "models": [
        {"name": "ck_yaml", "config": {"strategie": "upsert"}},
        {"name": "ck_ordinary", "description": "d", "config": {"tags": ["y"],
                                                               "meta": {"a": 1}}},
    ]
}


def _refused(key: str, known: str) -> str:
    return (f"unknown config key '{key}' (did you mean '{known}'?). It would be ignored, so the "
            f"model is not run: rename it to '{known}', or move a custom value under meta.")


#: misspellings: the model fails with this message, the target as it was
ERRORS = {
    "ck_typo": _refused("merge_update_conditon", "merge_update_condition"),
    "ck_stratgy": _refused("stratgy", "strategy"),
    "ck_unique_keys": _refused("unique_keys", "unique_key"),
    "ck_case": _refused("Strategy", "strategy"),
    "ck_dbt_key": _refused("contrat", "contract"),
    "ck_project": _refused("dedup_order_bi", "dedup_order_by"),
    "ck_yaml": _refused("strategie", "strategy"),
}
#: keys far from every known one: a warning, and the model runs
WARNINGS = {
    "ck_no_match": "dbt_merge: model 'ck_no_match': unknown config key 'owner_team'."
                   " It has no effect: fix its name, or move a custom value under meta.",
    "ck_far": "dbt_merge: model 'ck_far': unknown config key 'dedup_ordering' (did you mean"
              " 'dedup_order_by'?). It has no effect: fix its name, or move a custom value"
              " under meta.",
}
TARGET = [{"id": 0, "name": "before"}]


def _project(root):
    root = make_project(root, "cfg_keys", MODELS)
    project = yaml.safe_load((root / "dbt_project.yml").read_text())
    project["models"] = {"cfg_keys": PROJECT_MODELS}
    (root / "dbt_project.yml").write_text(yaml.safe_dump(project, sort_keys=False))
    (root / "models" / "schema.yml").write_text(yaml.safe_dump(SCHEMA_YML, sort_keys=False))
    return root


def _warnings(events: list) -> list[str]:
    return [e.data.msg for e in events if e.info.name == "JinjaLogWarning"]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    with DuckEngine() as engine:
        engine.setup(SCHEMA)
        for model in MODELS:
            engine.drop(SCHEMA, model)
        for model in ERRORS:  # an existing target, which a refused run must leave as it is
            engine.create(SCHEMA, model, [("id", "int"), ("name", "str")], TARGET)
    return _project(tmp_path_factory.mktemp("cfg_keys"))


@pytest.fixture(scope="module")
def first_run(project):
    events: list = []
    run = run_dbt(["run"], project, "duckdb", PROFILES_DIR, callbacks=[events.append])
    return run, _warnings(events)


def test_a_misspelt_key_fails_the_model_and_leaves_the_target(first_run):
    run, _ = first_run
    failed = {r.node.name for r in run.results if str(r.status) == "error"}
    assert failed == set(ERRORS), [(r.node.name, r.status, r.message) for r in run.results]
    with DuckEngine() as engine:
        for model, message in ERRORS.items():
            error = run.error(model)
            assert f"dbt_merge: model '{model}': {message}" in " ".join(error.split()), error
            assert "unique_key is missing" not in error
            assert engine.rows(SCHEMA, model)[1] == TARGET, model


def test_other_models_run(first_run):
    run, _ = first_run
    for model in set(MODELS) - set(ERRORS):
        assert str(run.result(model).status) == "success", run.result(model).message


@pytest.mark.parametrize("model", sorted(WARNINGS))
def test_a_key_far_from_every_known_one_is_a_warning(first_run, model):
    _, warnings = first_run
    assert WARNINGS[model] in warnings, warnings


def test_one_warning_per_unknown_key_and_none_for_ordinary_keys(first_run):
    _, warnings = first_run
    assert sorted(warnings) == sorted(WARNINGS.values()), warnings


@pytest.mark.parametrize("flag, model", [
    (["--warn-error"], "ck_no_match"),
    (["--warn-error-options", '{"error": ["JinjaLogWarning"]}'], "ck_far"),
])
def test_warn_error_fails_the_model_and_leaves_the_target(project, first_run, flag, model):
    run = run_dbt([*flag, "run", "--select", model], project, "duckdb", PROFILES_DIR,
                  vars={"v": 2})
    assert not run.success
    assert WARNINGS[model] in run.error(model)
    with DuckEngine() as engine:
        assert engine.rows(SCHEMA, model)[1] == [{"id": 1, "name": "a"}]


@pytest.mark.spark
def test_spark_keys_do_not_warn_but_a_typo_does(spark, tmp_path):
    spark.sql(f"create database if not exists {SCHEMA}")
    spark.sql(f"drop table if exists {SCHEMA}.ck_spark")
    model = _model(
        "file_format='iceberg', partition_by=['id'], tblproperties={'format-version': '2'},"
        " persist_docs={'relation': true}, merge_exclude_columns=none, owner_team='x'"
    )
    root = make_project(tmp_path / "spark", "cfg_keys_spark", {"ck_spark": model})
    events: list = []
    run = run_dbt(["run"], root, "spark", PROFILES_DIR, callbacks=[events.append])
    assert run.success, [(r.node.name, r.message) for r in run.results]
    assert _warnings(events) == [
        "dbt_merge: model 'ck_spark': unknown config key 'owner_team'."
        " It has no effect: fix its name, or move a custom value under meta."
    ]
