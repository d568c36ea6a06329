"""End to end on DuckDB: `dbt run` of the test project loads its ClickHouse sources (plugin)."""

from __future__ import annotations

import os

import duckdb
import pyarrow as pa
import pytest
from ch_data import FINAL_MATTERS, PROJECT_SOURCES, clickhouse_rows, project_args, rows
from dbt.adapters.duckdb.utils import SourceConfig
from dbt_merge.clickhouse.config import ClickHouseConfig
from dbt_merge.clickhouse.final_decision import FinalNotSupportedError
from dbt_merge.duckdb.plugin import Plugin
from duckdb_env import forget_dbt_duckdb_env

pytestmark = pytest.mark.clickhouse

PASSWORD = "s3cret-Pa55word-never-logged"


@pytest.fixture(scope="module")
def dbt_duckdb(ch, tmp_path_factory):
    """Run the project on DuckDB once; return the DuckDB file and dbt's log folder."""
    from dbt.cli.main import dbtRunner

    forget_dbt_duckdb_env()  # an earlier in-process run's environment would get the sources
    folder = tmp_path_factory.mktemp("ch_duckdb")
    env = {
        "DBT_MERGE_CH_DUCKDB_PATH": str(folder / "ch.duckdb"),
        "CLICKHOUSE_PASSWORD": PASSWORD,
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        result = dbtRunner().invoke(
            ["run", *project_args("duckdb", folder), "--log-level-file", "debug"]
        )
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    assert result.success, result.exception
    assert len(result.result.results) == len(PROJECT_SOURCES)
    return folder


@pytest.mark.parametrize(("source", "db", "table", "final"), PROJECT_SOURCES)
def test_duckdb_source_equals_clickhouse_per_decision(dbt_duckdb, ch, source, db, table, final):
    prefix = "a" if source == "ch" else "b"
    # dbt-duckdb keeps its connection open in this process: open the file the same way.
    with duckdb.connect(str(dbt_duckdb / "ch.duckdb")) as con:
        got = rows(con.execute(f"select * from main.{prefix}_{table}").fetchall())
    assert got == clickhouse_rows(ch, db, table, final)
    if table in FINAL_MATTERS:
        assert got != clickhouse_rows(ch, db, table, not final)


def test_password_never_logged(dbt_duckdb):
    logs = "".join(p.read_text() for p in (dbt_duckdb / "logs").glob("*.log"))
    assert "clickhouse" in logs
    assert PASSWORD not in logs
    config = ClickHouseConfig.from_mapping(
        {"dsn": f"https://user:{PASSWORD}@example.com:8443/db", "password": PASSWORD}
    )
    assert PASSWORD not in repr(config) and PASSWORD not in str(config)
    assert "user:***@example.com" in repr(config)


def test_forcing_final_on_merge_tree_fails_naming_source_and_engine(chdb_dsn):
    plugin = Plugin.create("dbt_merge.duckdb.plugin", alias="clickhouse", config={"dsn": chdb_dsn})
    config = SourceConfig(
        name="mt",
        identifier="mt",
        schema="ch_a",
        database=None,
        meta={"plugin": "clickhouse", "use_final": True},
        tags=[],
    )
    with pytest.raises(FinalNotSupportedError, match=r"'mt' \(ch_a\.mt\).*MergeTree"):
        plugin.load(config)
    config.meta["use_final"] = False
    assert plugin.load(config).read_all().num_rows == 3


def test_load_into_duckdb_streams_with_bounded_arrow_memory(ch, chdb_dsn):
    ch.command(
        "CREATE TABLE IF NOT EXISTS ch_a.wide (k UInt64, v String, ver UInt32)"
        " ENGINE = ReplacingMergeTree(ver) ORDER BY k"
    )
    ch.command("TRUNCATE TABLE ch_a.wide")
    ch.command("INSERT INTO ch_a.wide SELECT number, repeat('x', 100), 1 FROM numbers(1000000)")
    plugin = Plugin.create("dbt_merge.duckdb.plugin", alias="clickhouse", config={"dsn": chdb_dsn})
    reader = plugin.load(
        SourceConfig(name="wide", identifier="wide", schema="ch_a", database=None, meta={}, tags=[])
    )
    peak = 0

    def watched():
        nonlocal peak
        for batch in reader:
            peak = max(peak, pa.total_allocated_bytes())
            yield batch

    with duckdb.connect() as con:
        con.register("src", pa.RecordBatchReader.from_batches(reader.schema, watched()))
        con.execute("CREATE TABLE t AS SELECT * FROM src")
        assert con.execute("SELECT count(*), sum(length(v)) FROM t").fetchall() == [
            (1_000_000, 100_000_000)
        ]
    # The table is > 100 MB as Arrow; the stream never holds more than a few batches.
    assert 0 < peak < 20_000_000
