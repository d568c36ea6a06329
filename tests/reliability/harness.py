"""Generated dbt projects that use the package, and typed tables on DuckDB and Spark.

A project holds one model per case (`materialized='merge'`, the SELECT reads a table the test
created on the engine), so one dbt invocation merges many cases.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
PROFILES_DIR = ROOT / "integration_tests"

# Logical column types -> engine types.
DUCKDB_TYPES = {
    "int": "BIGINT",
    "float": "DOUBLE",
    "str": "VARCHAR",
    "date": "DATE",
    "ts": "TIMESTAMP",
    "bool": "BOOLEAN",
}
SPARK_TYPES = {
    "int": "bigint",
    "float": "double",
    "str": "string",
    "date": "date",
    "ts": "timestamp",
    "bool": "boolean",
}

GENERATE_SCHEMA_NAME = """\
{# Models name their schema exactly (no target-schema prefix), so tests can find them. #}
{% macro generate_schema_name(custom_schema_name, node) -%}
  {{ custom_schema_name if custom_schema_name else target.schema }}
{%- endmacro %}
"""


def make_project(root: Path, name: str, models: dict[str, str], vars: dict | None = None) -> Path:
    """Write a dbt project using the package (installed as `dbt deps` would: a symlink)."""
    root.mkdir(parents=True, exist_ok=True)
    project = {
        "name": name,
        "version": "0.1.0",
        "config-version": 2,
        "profile": "integration_tests",
        "model-paths": ["models"],
        "macro-paths": ["macros"],
        "vars": vars or {},
    }
    (root / "dbt_project.yml").write_text(yaml.safe_dump(project, sort_keys=False))
    (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
    (root / "macros").mkdir(exist_ok=True)
    (root / "macros" / "generate_schema_name.sql").write_text(GENERATE_SCHEMA_NAME)
    pkgs = root / "dbt_packages"
    pkgs.mkdir(exist_ok=True)
    if not (pkgs / "dbt_merge").exists():
        (pkgs / "dbt_merge").symlink_to(ROOT)
    write_models(root, models)
    return root


def write_models(root: Path, models: dict[str, str]) -> None:
    mdir = root / "models"
    mdir.mkdir(exist_ok=True)
    for old in mdir.glob("*.sql"):
        if old.stem not in models:
            old.unlink()
    for model, sql in models.items():
        (mdir / f"{model}.sql").write_text(sql)


def jinja_literal(value) -> str:
    """A Jinja literal for a config value. Strings use Python's repr (the quote the text does not
    contain): dbt's static config parser keeps a backslash-escaped quote as two characters."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(jinja_literal(v) for v in value) + "]"
    return json.dumps(value)


def model_sql(config: dict, select: str) -> str:
    """A merge model: config() from a dict, then the SELECT."""
    args = ", ".join(f"{k}={jinja_literal(v)}" for k, v in config.items())
    return "{{ config(materialized='merge', " + args + ") }}\n" + select + "\n"


# ---------------------------------------------------------------- DuckDB


def duckdb_connect():
    import duckdb

    return duckdb.connect(os.environ["DBT_MERGE_DUCKDB_PATH"])


def duck_quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def duckdb_create(con, table: str, columns: list[tuple[str, str]], rows: list[dict]) -> None:
    """Create `table` (schema.name, already quoted) with exact column types and rows."""
    cols = ", ".join(f"{duck_quote(c)} {DUCKDB_TYPES[t]}" for c, t in columns)
    con.execute(f"create or replace table {table} ({cols})")
    if rows:
        marks = ", ".join("?" for _ in columns)
        con.executemany(
            f"insert into {table} values ({marks})", [[r[c] for c, _ in columns] for r in rows]
        )


def duckdb_rows(con, table: str) -> tuple[list[str], list[dict]]:
    cur = con.execute(f"select * from {table}")
    names = [d[0] for d in cur.description]
    return names, [dict(zip(names, t, strict=True)) for t in cur.fetchall()]


def duckdb_exists(con, schema: str, name: str) -> bool:
    return bool(
        con.execute(
            "select count(*) from information_schema.tables"
            " where table_schema = ? and table_name = ?",
            [schema, name],
        ).fetchone()[0]
    )


# ---------------------------------------------------------------- Spark


def spark_quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def spark_schema(columns: list[tuple[str, str]]):
    from pyspark.sql import types as T

    mapping = {
        "int": T.LongType(),
        "float": T.DoubleType(),
        "str": T.StringType(),
        "date": T.DateType(),
        "ts": T.TimestampType(),
        "bool": T.BooleanType(),
    }
    return T.StructType([T.StructField(c, mapping[t], True) for c, t in columns])


def spark_create(spark, table: str, columns: list[tuple[str, str]], rows: list[dict]) -> None:
    """Create an Iceberg table with exact column types and rows (replacing it)."""
    df = spark.createDataFrame([[r[c] for c, _ in columns] for r in rows], spark_schema(columns))
    df.writeTo(table).using("iceberg").createOrReplace()


def spark_rows(spark, table: str) -> tuple[list[str], list[dict]]:
    df = spark.table(table)
    return df.columns, [r.asDict() for r in df.collect()]


def spark_exists(spark, schema: str, name: str) -> bool:
    return spark.catalog.tableExists(f"{schema}.{name}")


# ---------------------------------------------------------------- one interface for both


class DuckEngine:
    name = "duckdb"

    def __init__(self):
        self.con = duckdb_connect()

    def setup(self, *schemas: str) -> None:
        for s in schemas:
            self.con.execute(f"create schema if not exists {s}")

    def create(self, schema: str, table: str, columns: list[tuple[str, str]], rows: list) -> None:
        duckdb_create(self.con, f"{schema}.{duck_quote(table)}", columns, rows)

    def source(self, schema: str, table: str, columns: list[tuple[str, str]], rows: list) -> str:
        """A relation holding `rows` for a model to select from."""
        self.create(schema, table, columns, rows)
        return f"{schema}.{duck_quote(table)}"

    def drop(self, schema: str, table: str) -> None:
        self.con.execute(f"drop table if exists {schema}.{duck_quote(table)}")

    def exists(self, schema: str, table: str) -> bool:
        return duckdb_exists(self.con, schema, table)

    def rows(self, schema: str, table: str) -> tuple[list[str], list[dict]]:
        return duckdb_rows(self.con, f"{schema}.{duck_quote(table)}")


class SparkEngine:
    name = "spark"

    def __init__(self, spark):
        self.spark = spark

    def setup(self, *schemas: str) -> None:
        for s in schemas:
            self.spark.sql(f"create database if not exists {s}")

    def create(self, schema: str, table: str, columns: list[tuple[str, str]], rows: list) -> None:
        spark_create(self.spark, f"{schema}.{table}", columns, rows)

    def source(self, schema: str, table: str, columns: list[tuple[str, str]], rows: list) -> str:
        """A relation holding `rows` for a model to select from: a global temporary view (dbt's
        session shares this SparkSession), much cheaper than another Iceberg table."""
        df = self.spark.createDataFrame(
            [[r[c] for c, _ in columns] for r in rows], spark_schema(columns)
        )
        df.createOrReplaceGlobalTempView(f"{schema}_{table}")
        return f"global_temp.{schema}_{table}"

    def drop(self, schema: str, table: str) -> None:
        self.spark.sql(f"drop table if exists {schema}.{table}")

    def exists(self, schema: str, table: str) -> bool:
        return spark_exists(self.spark, schema, table)

    def rows(self, schema: str, table: str) -> tuple[list[str], list[dict]]:
        return spark_rows(self.spark, f"{schema}.{table}")
