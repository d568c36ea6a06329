"""`dbt run --threads 4` on a new DuckDB file: the threads load their ClickHouse sources at the
same time, and two of them creating the same new schema (or replacing the same table) used to
fail with `Catalog write-write conflict`. Loads are now serialized where they touch the catalog.

Two tests: the threads of dbt-duckdb's own environment started together by a barrier (fast,
fails on nearly every attempt without the fix), and real `dbt run --threads 4` processes on the
test project, each on a new file."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pytest
from ch_data import DEFAULT_FINAL, clickhouse_rows, project_args, rows
from dbt.adapters.duckdb.utils import SourceConfig
from duckdb_env import duckdb_env

pytestmark = pytest.mark.clickhouse

ATTEMPTS = 5
# (ClickHouse database = DuckDB schema, table): both schemas, and one table loaded twice
LOADS = [("ch_a", t) for t in ("mt", "rmt", "cmt", "smt", "rmt")] + [
    ("ch_b", t) for t in ("mt", "rmt", "cmt")
]


def _load_together(env, database: str) -> list[BaseException]:
    barrier = threading.Barrier(len(LOADS))
    errors: list[BaseException] = []

    def load(schema: str, table: str) -> None:
        config = SourceConfig(name=table, identifier=table, schema=schema, database=database,
                              meta={"plugin": "clickhouse"}, tags=[])
        barrier.wait()
        try:
            env.load_source("clickhouse", config)
        except BaseException as error:  # noqa: BLE001 - collected and asserted on below
            errors.append(error)

    threads = [threading.Thread(target=load, args=load_args) for load_args in LOADS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_threads_load_sources_into_a_new_file_together(ch, chdb_dsn, tmp_path):
    for attempt in range(ATTEMPTS):
        path = tmp_path / f"threads{attempt}.duckdb"
        with duckdb_env(path, chdb_dsn) as env:
            errors = _load_together(env, path.stem)
        assert errors == [], f"attempt {attempt}: {errors}"
        with duckdb.connect(str(path)) as con:
            for schema, table in set(LOADS):
                got = rows(con.execute(f'select * from "{schema}"."{table}"').fetchall())
                expected = clickhouse_rows(ch, schema, table, final=DEFAULT_FINAL[table])
                assert got == expected, (schema, table)


def _populate_chdb(folder: Path, env: dict) -> None:
    """Fill a chdb folder of its own in a child process (one process per chdb folder)."""
    here = Path(__file__).parent
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import clickhouse_connect; "
        "from ch_data import populate; "
        "c = clickhouse_connect.get_client(dsn=sys.argv[2], "
        "chdb_options={'config-file': sys.argv[3]}); populate(c); c.close()"
    )
    subprocess.run([sys.executable, "-c", code, str(here), env["CLICKHOUSE_DSN"],
                    env["CLICKHOUSE_CHDB_CONFIG"]], check=True, env=env)


def test_dbt_run_with_threads_on_new_files(tmp_path):
    from ch_data import CHDB_CONFIG

    (tmp_path / "config.xml").write_text(CHDB_CONFIG)
    env = {**os.environ, "CLICKHOUSE_DSN": f"chdb://{tmp_path / 'data'}",
           "CLICKHOUSE_CHDB_CONFIG": str(tmp_path / "config.xml")}
    _populate_chdb(tmp_path, env)
    dbt = str(Path(sys.executable).with_name("dbt"))
    failures = []
    for attempt in range(3):
        run_env = {**env, "DBT_MERGE_CH_DUCKDB_PATH": str(tmp_path / f"run{attempt}.duckdb")}
        run = subprocess.run([dbt, "run", *project_args("duckdb", tmp_path), "--threads", "4"],
                             env=run_env, capture_output=True, text=True)
        if run.returncode != 0:
            failures.append(f"attempt {attempt}:\n{run.stdout[-2500:]}")
    assert failures == [], "\n".join(failures)
