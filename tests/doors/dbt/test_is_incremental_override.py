"""The README's one-line is_incremental() override, in a project with an incremental model and
merge models, keeps what dbt does without it: a unit test of a model that calls
is_incremental() must override it with a boolean (and give `this` when true), and the override
applies at run time, to incremental and merge models alike. Outside unit tests,
is_incremental() is true on a merge model's second run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from dbt_helpers import run_dbt
from support.harness import PROFILES_DIR, DuckEngine, make_project

SCHEMA = "is_inc"
ROOT = Path(__file__).resolve().parents[3]
FILTER = "{% if is_incremental() %} where id > (select max(id) from {{ this }}) {% endif %}"
SRC = (
    "{{ config(materialized='table', schema='" + SCHEMA + "') }}\n"
    "select 1 as id, {{ var('v1', 10) }} as v union all select 2, 20"
    "{% if var('v1', 10) != 10 %} union all select 3, 30{% endif %}\n"
)


def _model(materialized: str, condition: str = FILTER) -> str:
    return (
        "{{ config(materialized='" + materialized + "', unique_key='id', schema='" + SCHEMA
        + "') }}\nselect * from {{ ref('ii_src') }}\n" + condition + "\n"
    )


MODELS = {
    "ii_src": SRC,
    "ii_inc": _model("incremental"),
    "ii_merge": _model("merge"),
    # calls the package's macro directly instead of the override
    "ii_merge_direct": _model("merge", FILTER.replace("is_incremental()",
                                                      "dbt_merge.is_incremental()")),
}
GIVEN_SRC = {"input": "ref('ii_src')", "rows": [{"id": 1, "v": 10}, {"id": 2, "v": 20}]}
GIVEN_THIS = {"input": "this", "rows": [{"id": 1, "v": 10}]}


def _unit_tests(model: str) -> list[dict]:
    return [
        {"name": f"ut_{model}_first_run", "model": model,
         "overrides": {"macros": {"is_incremental": False}}, "given": [GIVEN_SRC],
         "expect": {"rows": [{"id": 1, "v": 10}, {"id": 2, "v": 20}]}},
        {"name": f"ut_{model}_incremental", "model": model,
         "overrides": {"macros": {"is_incremental": True}}, "given": [GIVEN_SRC, GIVEN_THIS],
         "expect": {"rows": [{"id": 2, "v": 20}]}},
    ]


UNIT_TESTS = [ut for m in ("ii_inc", "ii_merge", "ii_merge_direct") for ut in _unit_tests(m)]


def _readme_override() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### is_incremental() in merge models", 1)[1]
    return re.search(r"```sql\n(.*?)```", section, flags=re.S).group(1)


def _project(root: Path, unit_tests: list[dict]) -> Path:
    root = make_project(root, "is_inc", MODELS)
    (root / "macros" / "is_incremental.sql").write_text(_readme_override())
    (root / "models" / "unit_tests.yml").write_text(yaml.safe_dump({"unit_tests": unit_tests}))
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    with DuckEngine() as engine:
        engine.setup(SCHEMA)
        for model in MODELS:
            engine.drop(SCHEMA, model)
    root = _project(tmp_path_factory.mktemp("is_inc"), UNIT_TESTS)
    first = run_dbt(["run"], root, "duckdb", PROFILES_DIR)
    second = run_dbt(["run"], root, "duckdb", PROFILES_DIR, vars={"v1": 11})
    unit = run_dbt(["test", "--select", "test_type:unit"], root, "duckdb", PROFILES_DIR)
    return {"first": first, "second": second, "unit": unit}


def test_second_run_is_incremental_in_merge_models(runs):
    assert runs["first"].success and runs["second"].success
    for model in ("ii_merge", "ii_merge_direct"):
        # the filter keeps only id 3: id 1's new value is not merged
        assert runs["second"].stats(model) == {"inserted": 1, "updated": 0, "deleted": 0,
                                               "unchanged": 0, "total": 3}, model
    with DuckEngine() as engine:
        for model in ("ii_inc", "ii_merge", "ii_merge_direct"):
            rows = sorted(tuple(r.values()) for r in engine.rows(SCHEMA, model)[1])
            assert rows == [(1, 10), (2, 20), (3, 30)], model


@pytest.mark.parametrize("unit_test", [ut["name"] for ut in UNIT_TESTS])
def test_unit_test_overrides_apply(runs, unit_test):
    result = runs["unit"].result(unit_test)
    assert str(result.status) == "pass", result.message


@pytest.mark.parametrize("model", ["ii_inc", "ii_merge", "ii_merge_direct"])
def test_unit_test_without_override_is_refused_at_parse(tmp_path, model):
    bare = {"name": "ut_bare", "model": model, "given": [GIVEN_SRC],
            "expect": {"rows": [{"id": 1, "v": 10}, {"id": 2, "v": 20}]}}
    run = run_dbt(["parse"], _project(tmp_path / "p", [bare]), "duckdb", PROFILES_DIR)
    assert not run.success
    assert (f"Boolean override for 'is_incremental' must be provided for unit test 'ut_bare'"
            f" in model '{model}'") in str(run.exception)


def test_unit_test_overriding_true_needs_this(tmp_path):
    no_this = {"name": "ut_no_this", "model": "ii_merge", "given": [GIVEN_SRC],
               "overrides": {"macros": {"is_incremental": True}},
               "expect": {"rows": [{"id": 2, "v": 20}]}}
    run = run_dbt(["parse"], _project(tmp_path / "p", [no_this]), "duckdb", PROFILES_DIR)
    assert not run.success
    assert "must have a 'this' input" in str(run.exception)
