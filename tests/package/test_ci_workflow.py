"""examples/ci: the GitHub Actions workflow's own commands, run locally against the integration
project on DuckDB (a database of its own), as a pull request's dry run would run them.

The project is loaded in its initial state first; the workflow's steps (dbt deps, dbt build with
dbt_merge_dry_run, the report script) then run in a shell as GitHub runs them, with the
increment selected through the workflow's DBT_VARS. Every merge must be counted exactly as a
real increment counts it and written nowhere; the error models must be rows with their error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import yaml
from doors.dbt.test_integration import ERRORS, EXPECTED_STATS, MERGE_MODELS, SPARK_ONLY

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "integration_tests"
EXAMPLES = ROOT / "examples" / "ci"
WORKFLOW = EXAMPLES / "dbt-merge-dry-run.yml"


def _tables(path: Path, names: list[str]) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {n: sorted(con.execute(f'select * from main."{n}"').fetchall(), key=repr)
                for n in names}
    finally:
        con.close()


def test_workflow_dry_run_report(tmp_path):
    workflow = yaml.safe_load(WORKFLOW.read_text())
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in on
    assert yaml.safe_load(workflow["env"]["DBT_VARS"]) == {"dbt_merge_dry_run": True}
    (job,) = workflow["jobs"].values()
    steps = {s["id"]: s for s in job["steps"] if "id" in s}
    # run here: deps, build, report; not here: the install and the comment (GitHub's API)
    assert [s.get("id") for s in job["steps"] if "run" in s] == [
        "install", "deps", "build", "report", None]
    assert "!cancelled()" in steps["report"]["if"]  # the report is posted when the build fails

    # the user's repository: the script where the workflow calls it
    repo = tmp_path / "repo"
    script = repo / ".github" / "scripts" / "merge_report.sh"
    script.parent.mkdir(parents=True)
    shutil.copy(EXAMPLES / "merge_report.sh", script)
    assert str(script.relative_to(repo)) in steps["report"]["run"]

    database = tmp_path / "ci.duckdb"
    summary = tmp_path / "step_summary.md"
    env = {**os.environ, **workflow["env"], **(job.get("env") or {})}
    env |= {
        "DBT_PROJECT_DIR": str(PROJECT),
        "DBT_PROFILES_DIR": str(PROJECT),
        "DBT_TARGET": "duckdb",
        "DBT_TARGET_PATH": str(tmp_path / "ci_target"),
        "DBT_MERGE_DUCKDB_PATH": str(database),
        "GITHUB_STEP_SUMMARY": str(summary),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "adapter"),
                                                    os.environ.get("PYTHONPATH")])),
    }

    def bash(script: str, step_env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=repo,
            env=env | (step_env or {}), capture_output=True, text=True, timeout=600)

    codes, logs = {}, {}

    def step(step_id: str) -> None:
        done = bash(steps[step_id]["run"], steps[step_id].get("env"))
        codes[step_id], logs[step_id] = done.returncode, done.stdout + done.stderr

    step("deps")
    # the main branch: the project's initial state, loaded by dbt in a process of its own (an
    # in-process dbt-duckdb would keep the database file open and locked)
    loaded = bash("dbt seed && dbt run")
    assert loaded.returncode == 0, loaded.stdout[-3000:]
    before = _tables(database, MERGE_MODELS)

    # the pull request: the increment
    env["DBT_VARS"] = "{dbt_merge_dry_run: true, phase: increment}"
    step("build")
    step("report")
    # the error models fail the build (and so the job); the report is still made
    assert codes == {"deps": 0, "build": 1, "report": 0}, logs

    assert _tables(database, MERGE_MODELS) == before  # a dry run writes nothing
    comment = (repo / env["MERGE_REPORT"]).read_text()
    assert comment.startswith("<!-- dbt-merge report -->\n### dbt-merge: merge statistics\n")
    assert summary.read_text() in comment
    text = summary.read_text()
    assert "**DRY RUN**: every merge was checked and counted; nothing was written." in text
    cells = [[c.strip() for c in line.strip("|").split("|")]
             for line in text.splitlines() if line.startswith("| `")]
    rows = {c[0].strip("`"): c[1:] for c in cells}
    errors = sorted(set(ERRORS) - SPARK_ONLY)
    assert sorted(rows) == sorted(MERGE_MODELS + errors)
    for model in MERGE_MODELS:
        counts = [str(EXPECTED_STATS[model][k]) for k in
                  ("inserted", "updated", "deleted", "unchanged", "total")]
        assert rows[model][0] == "success" and rows[model][2:7] == counts, (model, rows[model])
        assert rows[model][-1] == "yes", model
    for model in errors:
        assert rows[model][0] == "error" and rows[model][2:] == [""] * 8, model
        failure = next(line for line in text.splitlines() if line.startswith(f"- `{model}` "))
        assert "> called by" not in failure
        for fragment in ERRORS[model]:
            assert fragment in failure, (fragment, failure)
    # the project's tests compare every model with its increment: nothing was merged, they fail
    assert "- `equal_rows_upsert" in text
