"""A merge model's config key that nothing reads (a typo) draws a warning naming the model, the
key and the closest known key, wherever it was set (config(), dbt_project.yml, schema.yml);
ordinary dbt and adapter keys never do. --warn-error makes it an error that changes nothing."""

from __future__ import annotations

import pytest
import yaml
from dbt_helpers import run_dbt
from reliability.harness import PROFILES_DIR, DuckEngine, make_project

SCHEMA = "cfg_keys"
SELECT = "select {{ var('v', 1) }} as id, 'a' as name"


def _model(config: str = "") -> str:
    return (
        "{{ config(materialized='merge', unique_key='id', schema='" + SCHEMA + "'"
        + (", " + config if config else "") + ") }}\n" + SELECT + "\n"
    )


MODELS = {
    "ck_typo": _model("merge_update_conditon='name is not null'"),
    "ck_no_match": _model("owner_team='finance'"),
    "ck_project": _model(),  # its typo is set in dbt_project.yml
    "ck_yaml": _model(),  # its typo is set in schema.yml
    # ordinary dbt keys, and keys of the other adapter: no warning
    "ck_ordinary": (
        "{{ config(materialized='merge', unique_key='id', schema='" + SCHEMA + "',"
        " alias='ck_ordinary', tags=['t'], meta={'owner': 'x'}, enabled=true, full_refresh=false,"
        " persist_docs={'relation': false}, docs={'show': true}, grants={},"
        " contract={'enforced': false}, pre_hook='select 1', post_hook=['select 2'],"
        " on_schema_change='ignore', incremental_strategy='merge', tblproperties={'a': 'b'},"
        " location_root='/tmp/nowhere', clustered_by='id', buckets=none, indexes=[]) }}\n"
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
WARNINGS = {
    "ck_typo": "dbt_merge: model 'ck_typo': unknown config key 'merge_update_conditon'"
               " (did you mean 'merge_update_condition'?)",
    "ck_no_match": "dbt_merge: model 'ck_no_match': unknown config key 'owner_team'."
                   " It has no effect",
    "ck_project": "dbt_merge: model 'ck_project': unknown config key 'dedup_order_bi'"
                  " (did you mean 'dedup_order_by'?)",
    "ck_yaml": "dbt_merge: model 'ck_yaml': unknown config key 'strategie'"
               " (did you mean 'strategy'?)",
}


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
    return _project(tmp_path_factory.mktemp("cfg_keys"))


@pytest.fixture(scope="module")
def first_run(project):
    events: list = []
    run = run_dbt(["run"], project, "duckdb", PROFILES_DIR, callbacks=[events.append])
    return run, _warnings(events)


def test_every_model_still_runs(first_run):
    run, _ = first_run
    assert run.success, [(r.node.name, r.message) for r in run.results]


@pytest.mark.parametrize("model", sorted(WARNINGS))
def test_unknown_key_warns_with_the_closest_known_key(first_run, model):
    _, warnings = first_run
    assert [w for w in warnings if f"model '{model}'" in w] != [], warnings
    assert any(w.startswith(WARNINGS[model]) for w in warnings), warnings


def test_one_warning_per_unknown_key_and_none_for_ordinary_keys(first_run):
    _, warnings = first_run
    assert len(warnings) == len(WARNINGS), warnings
    assert not [w for w in warnings if "ck_ordinary" in w]


def test_warn_error_fails_the_model_and_leaves_the_target(project, first_run):
    run = run_dbt(["--warn-error", "run", "--select", "ck_typo"], project, "duckdb",
                  PROFILES_DIR, vars={"v": 2})
    assert not run.success
    assert WARNINGS["ck_typo"] in run.error("ck_typo")
    with DuckEngine() as engine:
        assert engine.rows(SCHEMA, "ck_typo")[1] == [{"id": 1, "name": "a"}]


@pytest.mark.spark
def test_spark_keys_do_not_warn_but_a_typo_does(spark, tmp_path):
    spark.sql(f"create database if not exists {SCHEMA}")
    spark.sql(f"drop table if exists {SCHEMA}.ck_spark")
    model = _model(
        "file_format='iceberg', partition_by=['id'], tblproperties={'format-version': '2'},"
        " persist_docs={'relation': true}, merge_exclude_columns=none, strategi='upsert'"
    )
    root = make_project(tmp_path / "spark", "cfg_keys_spark", {"ck_spark": model})
    events: list = []
    run = run_dbt(["run"], root, "spark", PROFILES_DIR, callbacks=[events.append])
    assert run.success, [(r.node.name, r.message) for r in run.results]
    assert _warnings(events) == [
        "dbt_merge: model 'ck_spark': unknown config key 'strategi' (did you mean 'strategy'?)."
        " It has no effect: fix its name, or move a custom value under meta."
    ]
