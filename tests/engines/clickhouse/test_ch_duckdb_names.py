"""ClickHouse sources whose database or table name needs quoting (space, dash, quote, dot, mixed
case) load into DuckDB under exactly that name, and models read them through `source()`."""

from __future__ import annotations

import duckdb
import pytest
import yaml
from ch_data import clickhouse_rows, rows
from dbt.adapters.duckdb.utils import SourceConfig
from dbt_helpers import run_dbt
from dbt_merge.duckdb.loader import qualified
from duckdb_env import duckdb_env, forget_dbt_duckdb_env

pytestmark = pytest.mark.clickhouse

DATABASE = "odd db-1.x"
# dbt source table name -> ClickHouse table (and DuckDB table) name
TABLES = {
    "t_space": "my table",
    "t_dash": "dash-name",
    "t_dot": "dot.name",
    "t_mixed": "MixedCase",
}
# dbt renders source() as "name" without escaping a double quote inside it, so a model cannot
# select this one; the plugin still loads it under its exact name. (A single quote or a
# backslash cannot be tested here: clickhouse-connect's chdb client passes chdb the
# HTTP-escaped parameter value, so `it's` is looked up as `it\'s`.)
DOUBLE_QUOTE = 'say "hi"'


@pytest.fixture(scope="module")
def odd_tables(ch):
    ch.command("CREATE DATABASE IF NOT EXISTS {db:Identifier}", parameters={"db": DATABASE})
    for i, table in enumerate([*TABLES.values(), DOUBLE_QUOTE]):
        names = {"db": DATABASE, "t": table}
        ch.command(
            "CREATE TABLE IF NOT EXISTS {db:Identifier}.{t:Identifier}"
            " (k UInt32, v String, ver UInt32) ENGINE = ReplacingMergeTree(ver) ORDER BY k",
            parameters=names,
        )
        ch.command("TRUNCATE TABLE {db:Identifier}.{t:Identifier}", parameters=names)
        # two versions of key 1 in separate parts: FINAL keeps the second
        for version in (1, 2):
            ch.command(
                "INSERT INTO {db:Identifier}.{t:Identifier}"
                f" VALUES (1, 'v{version}', {version}), ({i + 10}, 'x', 1)",
                parameters=names,
            )
    return ch


def _project(root, chdb_dsn):
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(yaml.safe_dump({
        "name": "ch_names", "version": "1.0", "config-version": 2, "profile": "ch_names",
        "models": {"ch_names": {"+materialized": "table"}},
    }))
    (root / "profiles.yml").write_text(yaml.safe_dump({"ch_names": {"target": "duckdb", "outputs": {
        "duckdb": {
            "type": "duckdb", "path": str(root / "names.duckdb"), "schema": "main", "threads": 1,
            "plugins": [{"module": "dbt_merge.duckdb.plugin", "alias": "clickhouse",
                         "config": {"dsn": chdb_dsn}}],
        }}}}))
    (root / "models" / "sources.yml").write_text(yaml.safe_dump({"version": 2, "sources": [{
        "name": "odd", "schema": DATABASE, "meta": {"plugin": "clickhouse"},
        "tables": [{"name": name, "identifier": table} for name, table in TABLES.items()],
    }]}))
    for name in TABLES:
        (root / "models" / f"m_{name}.sql").write_text(
            "select * from {{ source('odd', '" + name + "') }}\n")
    return root


def test_models_read_sources_with_odd_names(odd_tables, chdb_dsn, tmp_path):
    project = _project(tmp_path / "project", chdb_dsn)
    forget_dbt_duckdb_env()
    run = run_dbt(["run"], project, "duckdb")
    assert run.success, [(r.node.name, r.message) for r in run.results] or run.exception
    with duckdb.connect(str(project / "names.duckdb")) as con:
        for name, table in TABLES.items():
            expected = clickhouse_rows(odd_tables, DATABASE, table, final=True)
            assert rows(con.execute(f"select * from main.m_{name}").fetchall()) == expected, name
            loaded = con.execute(
                "select count(*) from information_schema.tables"
                " where table_schema = ? and table_name = ?", [DATABASE, table]).fetchone()
            assert loaded == (1,), f"{table!r} not loaded under its own name"


def test_plugin_loads_every_odd_name_exactly(odd_tables, chdb_dsn, tmp_path):
    path = tmp_path / "direct.duckdb"
    with duckdb_env(path, chdb_dsn) as env:
        for table in [*TABLES.values(), DOUBLE_QUOTE]:
            env.load_source("clickhouse", SourceConfig(
                name=table, identifier=table, schema=DATABASE, database=path.stem,
                meta={"plugin": "clickhouse"}, tags=[]))
    with duckdb.connect(str(path)) as con:
        for table in [*TABLES.values(), DOUBLE_QUOTE]:
            got = con.execute(
                "select * from query_table(?)",
                [f'"{path.stem}"."{DATABASE}"."{table.replace(chr(34), chr(34) * 2)}"'],
            ).fetchall()
            assert rows(got) == clickhouse_rows(odd_tables, DATABASE, table, final=True), table



def test_every_part_is_quoted():
    assert qualified("db", "odd db-1.x", 'say "hi"') == '"db"."odd db-1.x"."say ""hi"""'
    assert qualified(None, "s", "MixedCase") == '"s"."MixedCase"'
