"""The examples the docs show are files of examples/, and those files run as the docs say.

- examples/project, a dbt project on DuckDB (dbt in-process): seeds, a first load (`--vars
  '{day: 1}'`), the increment, `dbt test`. Every merge model's statistics are the ones the docs
  print for it.
- examples/python_doors.py: merge_table and merge_parquet_dataset, a first load and an
  increment each (examples/pyspark_job.py, merge_dataframe's, runs in
  tests/test_merge_dataframe.py).
- scripts/demo.py's statistics table (`make demo`) on the example project's runs.
- Every code block of README.md and docs/ that shows a merge model, a Python door's call, a Spark
  profile or a data test names the file of examples/ it is taken from on its first line
  (`-- examples/project/models/customers.sql`, `# examples/python_doors.py`), and is that
  file's text, line for line (indentation aside). A Spark profile's environment variables are
  explained on the page that shows it, and the example project's Spark profile is the one the
  test suite runs (tests/test_integration.py), less two settings the suite tunes for itself.

No Spark, one DuckDB file; a few seconds.
"""

from __future__ import annotations

import ast
import json
import os
import re
import runpy
import shutil
from pathlib import Path

import duckdb
import pytest
import yaml
from dbt_helpers import run_dbt

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
PROJECT = EXAMPLES / "project"
# errors.md shows bad inputs, the history old runs: neither is taken from the examples
DOCS = [ROOT / "README.md"] + sorted(
    p for p in (ROOT / "docs").rglob("*.md")
    if p.name not in ("errors.md", "benchmarks-history.md")
)

#: the statistics of each merge model of examples/project on the increment (day 2)
INCREMENT = {
    "customers": "MERGE upsert: 1 inserted, 2 updated, 0 deleted, 1 unchanged, 5 total",
    "customers_latest": "MERGE upsert: 1 inserted, 1 updated, 0 deleted, 1 unchanged, 5 total, "
                        "1 held back",
    "customers_from_cdc": "MERGE deduplicate: 1 inserted, 1 updated, 1 deleted, 0 unchanged, "
                          "3 total",
    "accounts": "MERGE full_merge: 1 inserted, 1 updated, 1 deleted, 1 unchanged, 4 total",
    "customers_lake": "MERGE upsert: 1 inserted, 2 updated, 0 deleted, 1 unchanged, 5 total",
}
FIRST_LOAD_ROWS = {"customers": 4, "customers_latest": 4, "customers_from_cdc": 3,
                   "accounts": 3, "customers_lake": 4}

HEADER = re.compile(r"^(?:--|#) (examples/\S+)$")
FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.M | re.S)
CONSOLE = re.compile(r"merge model \w+\.(\w+) \.+ \[(.*?)(?: in [\d.]+s)?\]")


def _blocks() -> list[tuple[Path, str, list[str]]]:
    """(page, language, lines) of every fenced code block of the docs."""
    found = []
    for page in DOCS:
        for indent, lang, body in FENCE.findall(page.read_text()):
            lines = [line[len(indent):] for line in body.splitlines()]
            found.append((page, lang, lines))
    return found


def _shows_an_example(lang: str, text: str) -> bool:
    if lang == "sql":
        return "materialized=" in text
    if lang == "python":
        return bool(re.search(r"\bmerge_(table|dataframe|parquet_dataset)\(", text))
    if lang == "yaml":
        return "type: spark" in text or "data_tests:" in text
    return False


def _stripped(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines]


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


# ------------------------------------------------------------------ the docs are the examples


def test_every_example_in_the_docs_names_its_file_and_is_its_text():
    taken, problems = [], []
    for page, lang, lines in _blocks():
        where = f"{page.relative_to(ROOT)} ({lang} block starting {lines[0][:60]!r})"
        header = HEADER.match(lines[0].strip()) if lines else None
        if header is None:
            if _shows_an_example(lang, "\n".join(lines)):
                problems.append(f"{where}: names no file of examples/ on its first line")
            continue
        source = ROOT / header.group(1)
        if not source.is_file():
            problems.append(f"{where}: {header.group(1)} does not exist")
            continue
        body = _stripped(lines[1:])
        while body and not body[-1]:
            body.pop()
        if not _contains(_stripped(source.read_text().splitlines()), body):
            problems.append(f"{where}: is not the text of {header.group(1)}")
        taken.append(header.group(1))
    assert not problems, "\n".join(problems)
    # the README and the docs show each model of the example project, both Python doors' file
    models = {p.relative_to(ROOT).as_posix() for p in (PROJECT / "models").rglob("*.sql")}
    staging = {m for m in models if "/staging/" in m}
    assert models - staging <= set(taken), sorted(models - staging - set(taken))
    assert {"examples/python_doors.py", "examples/pyspark_job.py",
            "examples/project/profiles.yml"} <= set(taken)


def test_the_console_lines_in_the_docs_are_the_example_projects(project_runs):
    shown = []
    for page in DOCS:
        for model, message in CONSOLE.findall(page.read_text()):
            assert model in INCREMENT, f"{page.name}: {model} is no merge model of examples/"
            assert message == INCREMENT[model], (page.name, model, message)
            shown.append(model)
    assert {"customers", "customers_latest", "customers_lake"} <= set(shown)


def test_each_profile_explains_its_environment_variables():
    """A profile on a page reads no environment variable the page does not name elsewhere; a
    Spark profile's are set by an `export` line of the page."""
    for page, lang, lines in _blocks():
        text = "\n".join(lines)
        if lang != "yaml":
            continue
        rest = page.read_text().replace(text, "")
        for name in re.findall(r"env_var\('(\w+)'", text):
            said = f"export {name}=" if "type: spark" in text else name
            assert said in rest, f"{page.name}: a profile reads {name}, and the page does not " \
                                 f"say what it is (no {said!r})"


def test_the_spark_profile_is_the_one_the_tests_run():
    """The example's session target is integration_tests' `spark` target (which every Spark test
    runs), less the driver's memory and code cache the suite sizes for its long session."""
    examples = yaml.safe_load((PROJECT / "profiles.yml").read_text())["examples"]["outputs"]
    suite = yaml.safe_load((ROOT / "integration_tests" / "profiles.yml").read_text())
    suite = suite["integration_tests"]["outputs"]
    mine, theirs = examples["spark"], suite["spark"]
    conf, tested = mine.pop("server_side_parameters"), theirs.pop("server_side_parameters")
    assert mine == theirs
    tested.pop("spark.driver.memory")
    java = "spark.driver.extraJavaOptions"
    tested[java] = tested[java].replace(" -XX:ReservedCodeCacheSize=512m", "")
    assert conf == tested
    thrift = dict(suite["spark_thrift"], port=10000)
    assert examples["spark_thrift"] == thrift


# ------------------------------------------------------------------ the examples run


@pytest.fixture(scope="module")
def project_runs(tmp_path_factory):
    """examples/project copied aside (its packages.yml pointing at this checkout), run from its
    folder as the docs say: seed, the first day, the second day, dbt test."""
    copy = tmp_path_factory.mktemp("examples") / "project"
    left_by_runs = {"target", "dbt_packages", "logs", "lake", "package-lock.yml"}
    shutil.copytree(PROJECT, copy, ignore=lambda folder, names: [
        n for n in names
        if Path(folder) == PROJECT and (n in left_by_runs or n.startswith("examples.duckdb"))
    ])
    packages = yaml.safe_load((copy / "packages.yml").read_text())
    assert packages == {"packages": [{"local": "../.."}]}
    (copy / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
    here = Path.cwd()
    os.chdir(copy)  # the DuckDB file and the dataset's folder are relative to where dbt runs
    runs, run_results = {}, {}
    steps = {"deps": (["deps"], None), "seed": (["seed"], None), "day 1": (["run"], {"day": 1}),
             "day 2": (["run"], None), "test": (["test"], None),
             # day 1 again into accounts, as a dry run (the demo's table marks it)
             "dry run": (["run", "-s", "+accounts"], {"day": 1, "dbt_merge_dry_run": True})}
    try:
        for step, (args, vars) in steps.items():
            runs[step] = run_dbt(args, copy, "duckdb", vars=vars)
            results = copy / "target" / "run_results.json"
            if args[0] == "run":
                run_results[step] = json.loads(results.read_text())["results"]
    finally:
        os.chdir(here)
    return copy, runs, run_results


def test_the_example_project_runs(project_runs):
    copy, runs, _ = project_runs
    for step, run in runs.items():
        assert run.success, (step, run.exception, [(r.node.name, r.message) for r in run.results])
    for model, rows in FIRST_LOAD_ROWS.items():
        assert runs["day 1"].stats(model) == {
            "inserted": rows, "updated": 0, "deleted": 0, "unchanged": 0, "total": rows}
    messages = {
        r.node.name: r.adapter_response["_message"]
        for r in runs["day 2"].results if r.node.config.materialized == "merge"
    }
    assert messages == INCREMENT
    assert len(runs["test"].results) == 3
    con = duckdb.connect(str(copy / "examples.duckdb"))  # dbt-duckdb keeps its own open
    try:
        # the late correction of customer 3 (updated_at older than the table's) is held back
        latest = con.execute("select customer_id, region from main.customers_latest "
                             "order by 1").fetchall()
        assert latest == [(1, "eu"), (2, "us"), (3, "eu"), (4, "us"), (5, "eu")]
        # account 2, gone from the CRM's extract, is soft-deleted and stays
        accounts = con.execute("select account_id, tier, is_deleted, deleted_at is not null "
                               "from main.accounts order by 1").fetchall()
        assert accounts == [(1, "platinum", False, False), (2, "silver", True, True),
                            (3, "bronze", False, False), (4, "silver", False, False)]
        lake = con.execute("select region, count(*) from read_parquet(?, hive_partitioning=true)"
                           " group by 1 order by 1",
                           [str(copy / "lake" / "customers" / "**" / "*.parquet")]).fetchall()
        assert lake == [("eu", 2), ("us", 3)]
    finally:
        con.close()


def test_the_python_doors_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # it writes customers.duckdb and lake/customers here
    script = EXAMPLES / "python_doors.py"
    results = runpy.run_path(str(script), run_name="example")["main"]()
    first, second = results["merge_table"]
    assert first.as_dict() == {"inserted": 4, "updated": 0, "deleted": 0, "unchanged": 0,
                               "total": 4}
    # as the dbt model `customers` (merge_check_columns sees customer 3's changed updated_at)
    assert second.as_dict() == {"inserted": 1, "updated": 2, "deleted": 0, "unchanged": 1,
                                "total": 5}
    _, increment = results["merge_parquet_dataset"]
    (shown,) = re.findall(r"^\s*# (\{'inserted'.*\})$", script.read_text(), re.M)
    assert increment == ast.literal_eval(shown)
    assert "analytics.customers: 1 inserted, 2 updated, 0 deleted, 1 unchanged, 5 total" in (
        capsys.readouterr().out
    )


def test_the_demo_table_shows_held_back_rows_and_dry_runs(project_runs):
    """scripts/demo.py's table (`make demo`), on the example project's runs: a sixth column for
    the rows a merge_update_condition held back ('-' where a model has none), and the mark of a
    dry run."""
    _, runs, run_results = project_runs
    assert runs["dry run"].success
    stats_rows = runpy.run_path(str(ROOT / "scripts" / "demo.py"), run_name="demo")["stats_rows"]
    day2 = {row[0]: row[1:] for row in stats_rows(run_results["day 2"])}
    assert day2["customers_latest"] == ("upsert", "1", "1", "0", "1", "5", "1", "")
    assert day2["customers"] == ("upsert", "1", "2", "0", "1", "5", "-", "")
    (dry,) = stats_rows(run_results["dry run"])
    assert dry == ("accounts", "full_merge", "0", "2", "1", "1", "4", "-",
                   "DRY RUN (nothing written)")
