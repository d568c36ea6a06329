"""A release's two halves, the Python package and the dbt package, refuse to work together at
different versions: dbt-duckdb runs in-process on a copy of the dbt package that says another
version."""

from __future__ import annotations

from pathlib import Path

import dbt_merge
import duckdb
import yaml
from dbt.cli.main import dbtRunner

ROOT = Path(__file__).resolve().parents[1]
DBT_PROJECT = yaml.safe_load((ROOT / "dbt_project.yml").read_text())
VERSION = dbt_merge.__version__


# ------------------------------------------------------------------ the halves check each other


PROFILE = """
release:
  target: duckdb
  outputs:
    duckdb:
      type: duckdb
      path: "{path}"
      threads: 1
"""


def _project_with_dbt_package(tmp_path: Path, version: str) -> Path:
    """A dbt project whose installed dbt_merge package is this checkout's macros under a
    dbt_project.yml saying `version`; a `location` model and a model with a history table."""
    package = tmp_path / "project" / "dbt_packages" / "dbt_merge"
    package.mkdir(parents=True)
    (package / "dbt_project.yml").write_text(
        yaml.safe_dump({**DBT_PROJECT, "version": version}, sort_keys=False)
    )
    (package / "macros").symlink_to(ROOT / "macros")
    project = package.parents[1]
    (project / "dbt_project.yml").write_text(yaml.safe_dump(
        {"name": "release", "version": "1.0.0", "config-version": 2, "profile": "release"}
    ))
    (project / "profiles.yml").write_text(PROFILE.format(path=tmp_path / "release.duckdb"))
    models = project / "models"
    models.mkdir()
    select = "select * from (values (1, 'a'), (2, 'b')) as t(id, v)"
    (models / "to_dataset.sql").write_text(
        "{{ config(materialized='merge', unique_key='id', location='"
        + str(tmp_path / "dataset") + "') }}\n" + select
    )
    (models / "with_history.sql").write_text(
        "{{ config(materialized='merge', unique_key='id', merge_history_table='history') }}\n"
        + select
    )
    return project


def _run(project: Path):
    result = dbtRunner().invoke(
        ["run", "--project-dir", str(project), "--profiles-dir", str(project)]
    )
    return {r.node.name: r for r in result.result.results}


def test_a_dbt_package_of_another_version_is_refused(tmp_path):
    project = _project_with_dbt_package(tmp_path, "9.9.9")
    results = _run(project)
    for name in ("to_dataset", "with_history"):
        assert str(results[name].status) == "error", (name, results[name].message)
        message = results[name].message
        assert "the dbt package dbt_merge (packages.yml) is version 9.9.9" in message, message
        assert f"the Python package dbt-merge is version {VERSION}" in message
        assert 'pip install "dbt-merge==9.9.9"' in message
        assert f"revision: v{VERSION}" in message
    # nothing was written: no dataset, no lock beside it, no history table, no merge target
    assert list(tmp_path.glob("*dataset*")) == []
    con = duckdb.connect(str(tmp_path / "release.duckdb"))
    try:
        tables = con.execute("select table_name from information_schema.tables").fetchall()
    finally:
        con.close()
    assert [t for (t,) in tables if t in ("history", "with_history")] == []


def test_the_same_version_runs(tmp_path):
    project = _project_with_dbt_package(tmp_path, VERSION)
    results = _run(project)
    for name in ("to_dataset", "with_history"):
        assert str(results[name].status) == "success", (name, results[name].message)
        assert results[name].adapter_response["_message"].startswith("MERGE upsert: 2 inserted")
