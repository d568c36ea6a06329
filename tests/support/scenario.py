"""Scenario helpers shared by the trust and conditions tests: plain SQL on the engine under test,
small dbt projects of merge models, and the model's result message."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from dbt_helpers import run_dbt

from .harness import PROFILES_DIR, DuckEngine, SparkEngine, ThriftEngine, make_project, model_sql

ENGINES = [
    "duckdb",
    pytest.param("spark", marks=pytest.mark.spark),
    pytest.param("spark_thrift", marks=[pytest.mark.spark, pytest.mark.thrift]),
]


class Db:
    """Plain SQL on the engine the test runs on, with the few spellings that differ."""

    def __init__(self, name: str, spark=None, thrift_port: int | None = None):
        self.name = name
        if name == "duckdb":
            self.engine = DuckEngine()
        elif name == "spark":
            self.engine = SparkEngine(spark)
        else:
            self.engine = ThriftEngine(thrift_port)
        self.dialect = self.engine.dialect

    def sql(self, statement: str) -> list[tuple]:
        if self.name == "duckdb":
            return self.engine.con.execute(statement).fetchall()
        if self.name == "spark_thrift":
            return self.engine.sql(statement)
        return [tuple(r) for r in self.engine.spark.sql(statement).collect()]

    def table(self, schema: str, name: str, select: str) -> None:
        """(Re)create schema.name from a SELECT (exact types come from its casts)."""
        self.engine.setup(schema)
        using = " using iceberg" if self.dialect == "spark" else ""
        self.sql(f"create or replace table {schema}.{name}{using} as {select}")

    def rows(self, schema: str, name: str) -> list[tuple]:
        if self.name == "spark_thrift":  # refreshed: dbt's sessions write the table
            return sorted(self.engine.table(f"{schema}.{name}")[1], key=repr)
        return sorted(self.sql(f"select * from {schema}.{name}"), key=repr)

    def tables(self, schema: str) -> list[str]:
        if self.name == "duckdb":
            return [r[0] for r in self.sql(
                f"select table_name from information_schema.tables where table_schema = '{schema}'"
            )]
        return [r[1] for r in self.sql(f"show tables in {schema}") if not r[2]]

    def columns(self, schema: str, name: str) -> list[str]:
        return self.engine.rows(schema, name)[0]

    @property
    def rand(self) -> str:
        return "random()" if self.name == "duckdb" else "rand()"

    def close(self) -> None:
        if self.name == "duckdb":
            self.engine.con.close()


def rows_sql(columns: str, rows: list[str]) -> str:
    """`select <row 1> union all select <row 2> ...`; the first row carries the casts."""
    return " union all ".join(
        "select " + (columns.format(*r) if i == 0 else ", ".join(r)) for i, r in enumerate(rows)
    )


#: dbt vars of every project `project` makes (the write_once fixture sets one for its test)
PROJECT_VARS: dict = {}


def project(db: Db, tmp: Path, name: str, models: dict[str, tuple[dict, str]], yml=None) -> Path:
    """A project of merge models ({model: (config, select)}); Spark tables are Iceberg."""
    sqls = {}
    for model, (cfg, select) in models.items():
        cfg = dict(cfg)
        if db.dialect == "spark":
            cfg.setdefault("file_format", "iceberg")
        sqls[model] = model_sql(cfg, select)
    root = make_project(tmp / f"{name}_{db.name}", f"{name}_{db.name}", sqls,
                        dict(PROJECT_VARS))
    if yml:
        (root / "models" / "schema.yml").write_text(yaml.safe_dump(yml, sort_keys=False))
    return root


def dbt(db: Db, root: Path, *args: str):
    return run_dbt(list(args), root, db.name, PROFILES_DIR)


def message(run, model: str) -> str:
    r = run.result(model)
    return " ".join(((r.adapter_response or {}).get("_message") or r.message or "").split())


IDS = "cast({} as bigint) as id, cast({} as string) as name"
