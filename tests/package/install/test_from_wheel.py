"""The package as a user installs it: the sdist and the wheel built once (`python -m build`, as
`make dist` does), the wheel installed with pip into a fresh virtualenv per extra, that extra
alone (`duckdb`, `parquet`, `spark`, `chdb`), and what the extra is for run from there, in
processes that see nothing of this repository's `.venv` or source tree (only the dbt package,
through a new project's packages.yml).

This is what the repository's own environment hides: it has every extra's dependencies at
once (a `location` model failed after `pip install ".[duckdb]"` because nothing declared numpy).

The virtualenvs are made two at a time in the background, as soon as the first test asks for
one, for the extras of the tests selected; pip's cache makes them cheap after the first time.
`python -m pytest -m install` runs only these; `-k duckdb` one extra.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import time
import zipfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import dbt_merge
import duckdb
import pytest
import yaml

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parents[3]
VERSION = dbt_merge.__version__
EXTRAS = ("duckdb", "parquet", "spark", "chdb")
INSTALL_SECONDS = 1800  # a cold pip cache downloads about 600 MB
RUN_SECONDS = 600
#: Variables of this test run that must not reach a user's process.
PRIVATE = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "ICEBERG_JAR", "SPARK_STATE_DIR")


def _run(args: list, timeout: int = RUN_SECONDS, **kwargs) -> str:
    """Run a command; its stdout, or a failure with everything it printed."""
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kwargs
    )
    if done.returncode != 0:
        pytest.fail(
            f"{' '.join(map(str, args))} exited {done.returncode}\n"
            f"--- stdout\n{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-6000:]}"
        )
    return done.stdout


@dataclass(frozen=True)
class Venv:
    """A fresh virtualenv holding the wheel with one extra."""

    path: Path
    extra: str
    seconds: float

    def run(self, args: list, cwd: Path, timeout: int = RUN_SECONDS) -> str:
        return _run(args, timeout=timeout, cwd=cwd, env=_user_env(self.path))

    def python(self, script: str, cwd: Path, *args) -> dict:
        """Run `script` with the virtualenv's Python; the JSON of its last line of output."""
        cwd.mkdir(parents=True, exist_ok=True)
        path = cwd / "script.py"
        path.write_text(PREAMBLE + textwrap.dedent(script))
        out = self.run([self.path / "bin" / "python", path, *args], cwd=cwd)
        return json.loads(out.strip().splitlines()[-1])


def _user_env(venv: Path) -> dict[str, str]:
    """The environment of a user's shell with `venv` first on PATH: nothing of this test run
    (this checkout on PYTHONPATH would also make pip take the package as installed)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in PRIVATE and not k.startswith(("DBT_", "CLICKHOUSE_"))
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


# Every script first checks that it runs the installed package, not this checkout.
PREAMBLE = """\
import json
import sys
from pathlib import Path

import dbt_merge

assert Path(dbt_merge.__file__).is_relative_to(Path(sys.prefix)), dbt_merge.__file__
"""


def _install(path: Path, wheel: Path, extra: str) -> Venv:
    start = time.monotonic()
    env = _user_env(path)
    _run([sys.executable, "-m", "venv", path], timeout=INSTALL_SECONDS, env=env)
    _run(
        # --no-compile: Python compiles what a test imports; compiling every module of PySpark
        # or dbt at install costs a quarter of the install's CPU and tests nothing of ours
        [path / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-compile",
         f"{wheel}[{extra}]"],
        timeout=INSTALL_SECONDS,
        env=env,
        cwd=path,
    )
    return Venv(path, extra, round(time.monotonic() - start, 1))


def _extra_of(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("install")
    return marker.args[0] if marker is not None and marker.args else None


@pytest.fixture(scope="session")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel built from this checkout (the wheel from the sdist)."""
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", out, ROOT], timeout=INSTALL_SECONDS)
    return out


@pytest.fixture(scope="session")
def wheel(dist) -> Path:
    (found,) = dist.glob("*.whl")
    return found


@pytest.fixture(scope="session")
def installs(request, wheel, tmp_path_factory) -> Iterator[dict[str, Future]]:
    """One virtualenv per extra the selected tests use, made two at a time in the background;
    deleted at the end of the session (2.4 GB for the four)."""
    wanted = {_extra_of(item) for item in request.session.items} & set(EXTRAS)
    root = tmp_path_factory.mktemp("venvs")
    with ThreadPoolExecutor(max_workers=2) as pool:
        yield {e: pool.submit(_install, root / e, wheel, e) for e in EXTRAS if e in wanted}
    shutil.rmtree(root, ignore_errors=True)


def _venv(installs: dict[str, Future], extra: str) -> Venv:
    venv = installs[extra].result()
    print(f"\n{extra}: fresh virtualenv with the wheel in {venv.seconds} s", file=sys.stderr)
    assert venv.run(["dbt-merge", "--version"], cwd=venv.path).strip() == f"dbt-merge {VERSION}"
    return venv


def test_the_wheel_and_the_sdist_carry_the_licence_and_the_dbt_package(dist, wheel):
    """Both carry the whole dbt package (dbt_project.yml and every macro), which the Python
    front ends render and `dbt-merge dbt-package` hands to a dbt project."""
    checkout = {"dbt_project.yml": (ROOT / "dbt_project.yml").read_bytes()} | {
        f"macros/{p.relative_to(ROOT / 'macros')}": p.read_bytes()
        for p in (ROOT / "macros").rglob("*.sql")
    }
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"dbt_merge-{VERSION}.dist-info"
        metadata = archive.read(f"{info}/METADATA").decode()
        shipped = {
            n.removeprefix("dbt_merge/dbt_package/"): archive.read(n)
            for n in names if n.startswith("dbt_merge/dbt_package/")
        }
    assert {f"{info}/licenses/LICENSE", f"{info}/licenses/NOTICE"} <= names
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    assert f"Version: {VERSION}" in metadata.splitlines()
    assert shipped == checkout
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        top = f"dbt_merge-{VERSION}"
        assert {f"{top}/LICENSE", f"{top}/NOTICE"} <= set(archive.getnames())
        inside = f"{top}/adapter/dbt_merge/dbt_package/"
        packaged = {m.name.removeprefix(inside): archive.extractfile(m).read()
                    for m in archive.getmembers() if m.name.startswith(inside) and m.isfile()}
    assert packaged == checkout


DBT_PROJECT = """\
name: first_merge
version: "1.0.0"
config-version: 2
profile: first_merge
"""

# A first load (batch 1), then an increment (batch 2) that updates id 2, deletes 3, inserts 4.
CUSTOMERS = """\
{{ config(materialized='merge', strategy='full_merge', unique_key='id'%s) }}
{%% set rows = [(1, 'ann'), (2, 'bob'), (3, 'cy')] if var('batch') == 1
               else [(1, 'ann'), (2, 'bobby'), (4, 'dee')] %%}
{%% for id, name in rows %%}
select {{ id }} as id, '{{ name }}' as name {{ 'union all' if not loop.last }}
{%% endfor %%}
"""

DBT_RUNS = """
from dbt.cli.main import dbtRunner

args = ["--project-dir", ".", "--profiles-dir", "."]
assert dbtRunner().invoke(["deps", *args]).success
runs = []
for batch in (1, 2):
    result = dbtRunner().invoke(["run", *args, "--vars", json.dumps({"batch": batch})])
    runs.append({r.node.name: [str(r.status), r.adapter_response.get("_message") or r.message]
                 for r in result.result.results})
"""


def _dbt_project(venv: Venv, root: Path, target: dict, models: dict[str, str]) -> Path:
    """A new dbt project of a user, installing the dbt package the installed Python package
    carries, as docs/install.md says (`dbt-merge dbt-package --copy`, then `local:`)."""
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(DBT_PROJECT)
    copied = venv.run(["dbt-merge", "dbt-package", "--copy", "dbt_merge_package"], cwd=root)
    assert copied.strip() == str(root / "dbt_merge_package")
    assert yaml.safe_load((root / "dbt_merge_package" / "dbt_project.yml").read_text())[
        "version"] == VERSION
    (root / "packages.yml").write_text(
        yaml.safe_dump({"packages": [{"local": "dbt_merge_package"}]}))
    profile = {"first_merge": {"target": "dev", "outputs": {"dev": target}}}
    (root / "profiles.yml").write_text(yaml.safe_dump(profile))
    for name, sql in models.items():
        (root / "models" / f"{name}.sql").write_text(sql)
    return root


def _stats(full_merge: str, upsert: str) -> list[list[str]]:
    return [["success", f"MERGE full_merge: {full_merge}"], ["success", f"MERGE upsert: {upsert}"]]


@pytest.mark.install("duckdb")
def test_duckdb_extra_runs_a_new_dbt_project(installs, tmp_path):
    venv = _venv(installs, "duckdb")
    project = _dbt_project(
        venv,
        tmp_path / "project",
        {"type": "duckdb", "path": "first_merge.duckdb", "threads": 1},
        {
            "customers": CUSTOMERS % "",
            "customers_dataset": "{{ config(materialized='merge', unique_key='id', "
            "location='datasets/customers') }}\nselect * from {{ ref('customers') }}\n",
        },
    )
    runs = venv.python(DBT_RUNS + "print(json.dumps(runs))", project)
    first, second = ([run["customers"], run["customers_dataset"]] for run in runs)
    assert first == _stats(
        "3 inserted, 0 updated, 0 deleted, 0 unchanged, 3 total",
        "3 inserted, 0 updated, 0 deleted, 0 unchanged, 3 total",
    )
    assert second == _stats(
        "1 inserted, 1 updated, 1 deleted, 1 unchanged, 3 total",
        "1 inserted, 1 updated, 0 deleted, 1 unchanged, 4 total",
    )
    dataset = project / "datasets" / "customers"
    rows = duckdb.sql(
        f"select id, name from read_parquet('{dataset}/**/*.parquet') order by id"
    ).fetchall()
    assert rows == [(1, "ann"), (2, "bobby"), (3, "cy"), (4, "dee")]
    # beside it only the dataset's work folder, holding nothing but its two lock files
    assert sorted(p.name for p in dataset.parent.iterdir()) == [".customers.dbt_merge", "customers"]
    assert sorted(p.name for p in (dataset.parent / ".customers.dbt_merge").iterdir()) == [
        "lock", "publish.lock"]
    report = venv.run(["dbt-merge", "report", "target/run_results.json"], cwd=project)
    assert "customers_dataset" in report and "full_merge" in report


@pytest.mark.install("parquet")
def test_parquet_extra_runs_merge_table_and_merge_parquet_dataset(installs, tmp_path):
    venv = _venv(installs, "parquet")
    out = venv.python(
        """
        import importlib.util

        import duckdb
        import pyarrow as pa
        from dbt_merge import merge_parquet_dataset
        from dbt_merge.duckdb import merge_table
        from dbt_merge.render import macros_dir

        first = pa.table({"id": [1, 2, 3], "name": ["ann", "bob", "cy"]})
        second = pa.table({"id": [1, 2, 4], "name": ["ann", "bobby", "dee"]})
        con = duckdb.connect()
        print(json.dumps({
            "table": [merge_table(con, s, "customers", "id", strategy="full_merge").as_dict()
                      for s in (first, second)],
            "rows": con.execute("select * from customers order by id").fetchall(),
            "dataset": [merge_parquet_dataset(s, "lake/customers", "id", strategy="full_merge")
                        for s in (first, second)],
            "macros": str(macros_dir().relative_to(Path(dbt_merge.__file__).parent)),
            "dbt": importlib.util.find_spec("dbt") is not None,
        }))
        """,
        tmp_path / "run",
    )
    first = {"inserted": 3, "updated": 0, "deleted": 0, "unchanged": 0, "total": 3}
    second = {"inserted": 1, "updated": 1, "deleted": 1, "unchanged": 1, "total": 3}
    assert out["table"] == out["dataset"] == [first, second]
    assert out["rows"] == [[1, "ann"], [2, "bobby"], [4, "dee"]]
    assert out["macros"] == "dbt_package/macros"  # the copy inside the wheel
    assert out["dbt"] is False  # the Python doors need no dbt


# A dbt-spark `session` target on Iceberg (docs/spark.md), its state in the project's folder.
SPARK_STATE = "{{ env_var('SPARK_STATE_DIR') }}"
SPARK_TARGET = {
    "type": "spark",
    "method": "session",
    "host": "NA",
    "schema": "analytics",
    "threads": 1,
    "server_side_parameters": {
        "spark.master": "local[1]",
        "spark.jars": "{{ env_var('ICEBERG_JAR') }}",
        "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
        "spark.sql.catalog.spark_catalog.type": "hive",
        "spark.hadoop.iceberg.engine.hive.lock-enabled": "false",
        "spark.sql.legacy.useV1Command": "true",
        "spark.hadoop.javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={SPARK_STATE}/metastore_db;create=true",
        "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
        "spark.hadoop.hive.metastore.schema.verification": "false",
        "spark.sql.warehouse.dir": f"{SPARK_STATE}/warehouse",
        "spark.driver.extraJavaOptions":
            f"-Dderby.system.home={SPARK_STATE} -XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        "spark.sql.shuffle.partitions": "1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    },
}


@pytest.mark.install("spark")
def test_spark_extra_runs_merge_dataframe_and_a_dbt_spark_model_on_iceberg(installs, tmp_path):
    venv = _venv(installs, "spark")
    project = _dbt_project(
        venv, tmp_path / "project", SPARK_TARGET,
        {"customers": CUSTOMERS % ", file_format='iceberg'"}
    )
    out = venv.python(
        textwrap.dedent("""
        import os

        import snowpark_connect_deps_iceberg as deps
        from dbt_merge.spark import merge_dataframe
        from dbt_merge.spark.profile import get_spark_session, load_target, spark_conf

        jar = deps.get_jar_path("iceberg-spark-runtime-3.5_2.12-1.10.2.jar")
        os.environ["ICEBERG_JAR"] = str(jar)
        os.environ["SPARK_STATE_DIR"] = str(Path("state").resolve())
        spark = get_spark_session(spark_conf(load_target(".", "first_merge", "dev")))
        spark.sql("create schema if not exists doors")
        doors = []
        for rows in ([(1, "ann"), (2, "bob"), (3, "cy")], [(1, "ann"), (2, "bobby"), (4, "dee")]):
            df = spark.createDataFrame(rows, "id int, name string")
            result = merge_dataframe(df, "doors.customers", "id", strategy="full_merge",
                                     file_format="iceberg")
            doors.append({**result.as_dict(), "snapshot_id": result.snapshot_id is not None})
        provider = spark.sql("describe table extended doors.customers").where(
            "col_name = 'Provider'").collect()[0][1]
        """)
        + DBT_RUNS
        + textwrap.dedent("""
        rows = {t: [list(r) for r in spark.sql(f"select * from {t} order by id").collect()]
                for t in ("doors.customers", "analytics.customers")}
        print(json.dumps({"doors": doors, "provider": provider, "dbt": runs, "rows": rows}))
        spark.stop()
        """),
        project,
    )
    first = {"inserted": 3, "updated": 0, "deleted": 0, "unchanged": 0, "total": 3}
    second = {"inserted": 1, "updated": 1, "deleted": 1, "unchanged": 1, "total": 3}
    assert out["doors"] == [{**first, "snapshot_id": True}, {**second, "snapshot_id": True}]
    assert out["provider"] == "iceberg"
    assert [run["customers"] for run in out["dbt"]] == [
        ["success", "MERGE full_merge: 3 inserted, 0 updated, 0 deleted, 0 unchanged, 3 total"],
        ["success", "MERGE full_merge: 1 inserted, 1 updated, 1 deleted, 1 unchanged, 3 total"],
    ]
    merged = [[1, "ann"], [2, "bobby"], [4, "dee"]]
    assert out["rows"] == {"doors.customers": merged, "analytics.customers": merged}


@pytest.mark.install("chdb")
def test_chdb_extra_reads_an_embedded_clickhouse_table(installs, tmp_path):
    venv = _venv(installs, "chdb")
    out = venv.python(
        """
        from dbt_merge.clickhouse.client import Catalog, connect
        from dbt_merge.clickhouse.config import ClickHouseConfig

        client = connect(ClickHouseConfig.from_mapping({"dsn": "chdb://" + sys.argv[1]}))
        client.command("create database shop")
        client.command("create table shop.customers (id UInt32, name String, ver UInt32)"
                       " engine = ReplacingMergeTree(ver) order by id")
        client.command("system stop merges shop.customers")
        client.command("insert into shop.customers values (1, 'ann', 1), (2, 'bob', 1)")
        client.command("insert into shop.customers values (2, 'bobby', 2)")
        catalog = Catalog(client)
        plan = catalog.plan("shop", "customers", None)
        print(json.dumps({
            "engine": plan.table.engine.engine,
            "final": plan.decision.use_final,
            "rows": catalog.stream(plan).read_all().sort_by("id").to_pylist(),
        }))
        """,
        tmp_path / "run",
        tmp_path / "chdb",
    )
    assert out == {
        "engine": "ReplacingMergeTree",
        "final": True,
        "rows": [{"id": 1, "name": "ann", "ver": 1}, {"id": 2, "name": "bobby", "ver": 2}],
    }
    # a Python door without its extra: one error naming the extra, not a missing module's name
    door = subprocess.run([venv.path / "bin" / "python", "-c",
                           "from dbt_merge.spark import merge_dataframe"],
                          capture_output=True, text=True, cwd=tmp_path,
                          env=_user_env(venv.path), timeout=RUN_SECONDS)
    assert door.returncode == 1, door
    assert door.stderr.splitlines()[-1] == (
        "ModuleNotFoundError: dbt_merge's Python doors render the package's macros with Jinja2, "
        "which is not installed here. Install the extra of the door: pip install "
        "'dbt-merge[spark]' for merge_dataframe, 'dbt-merge[parquet]' for merge_table and "
        "merge_parquet_dataset."), door.stderr
    door = subprocess.run([venv.path / "bin" / "python", "-c",
                           "from dbt_merge import merge_parquet_dataset"],
                          capture_output=True, text=True, cwd=tmp_path,
                          env=_user_env(venv.path), timeout=RUN_SECONDS)
    assert door.returncode == 1, door
    assert door.stderr.splitlines()[-1] == (
        "ModuleNotFoundError: dbt_merge.merge_parquet_dataset needs DuckDB and Jinja2, which "
        "are not installed here: pip install 'dbt-merge[parquet]'."), door.stderr
    # inspect reads a dbt project, which needs dbt: one error line naming the extra
    done = subprocess.run(["dbt-merge", "inspect", "--dsn", "chdb://" + str(tmp_path / "chdb")],
                          capture_output=True, text=True, cwd=tmp_path,
                          env=_user_env(venv.path), timeout=RUN_SECONDS)
    assert done.returncode == 1 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.splitlines() == [
        "dbt-merge: error: dbt-merge inspect needs dbt, which is not installed here. Install the "
        "extra that brings it beside the one you have: pip install 'dbt-merge[duckdb]' (with "
        "[chdb] for an embedded ClickHouse)."], done.stderr
    # land writes through the Spark door (PySpark, Jinja2): one error line naming its extra
    done = subprocess.run(["dbt-merge", "land"], capture_output=True, text=True, cwd=tmp_path,
                          env=_user_env(venv.path), timeout=RUN_SECONDS)
    assert done.returncode == 1 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.splitlines() == [
        "dbt-merge: error: dbt-merge land needs Jinja2, which is not installed here. Install the "
        "extra that brings it beside the one you have: pip install 'dbt-merge[spark]' (with "
        "[chdb] for an embedded ClickHouse)."], done.stderr
