"""Generated dbt projects that use the package, and typed tables on DuckDB and Spark (in-process,
or over a Thrift server).

A project holds one model per case (`materialized='merge'`, the SELECT reads a table the test
created on the engine), so one dbt invocation merges many cases.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import yaml

from .coltypes import decimal_of, engine_type

ROOT = Path(__file__).resolve().parents[2]
PROFILES_DIR = ROOT / "integration_tests"

GENERATE_SCHEMA_NAME = """\
{# Models name their schema exactly (no target-schema prefix), so tests can find them. #}
{% macro generate_schema_name(custom_schema_name, node) -%}
  {{ custom_schema_name if custom_schema_name else target.schema }}
{%- endmacro %}
"""


def make_project(
    root: Path,
    name: str,
    models: dict[str, str],
    vars: dict | None = None,
    yml: dict | None = None,
) -> Path:
    """Write a dbt project using the package (installed as `dbt deps` would: a symlink);
    `yml` becomes models/schema.yml (sources, model properties such as contracts)."""
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
    if yml:
        (root / "models" / "schema.yml").write_text(yaml.safe_dump({"version": 2, **yml}))
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


#: suites whose cases cost Python alone (dbt's or the package's on DuckDB) run them in this many
#: processes side by side: one core each, and the machine has two
PROCESSES = max(1, min(2, os.cpu_count() or 1))


def process_pool(workers: int = PROCESSES) -> ProcessPoolExecutor:
    """A pool of `workers` spawned processes: never forked, the tests' process may hold a JVM."""
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


def duckdb_connect():
    import duckdb

    return duckdb.connect(os.environ["DBT_MERGE_DUCKDB_PATH"])


def duck_quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def duckdb_create(con, table: str, columns: list[tuple[str, str]], rows: list[dict]) -> None:
    """Create `table` (schema.name, already quoted) with exact column types and rows."""
    cols = ", ".join(f"{duck_quote(c)} {engine_type(t, 'duckdb')}" for c, t in columns)
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
    # fetchall: DuckDB 2.0's fetchone() leaves the result unfinished, which the next call on the
    # connection meets (merge_table refuses it: it would replace that result)
    return bool(
        con.execute(
            "select count(*) from information_schema.tables"
            " where table_schema = ? and table_name = ?",
            [schema, name],
        ).fetchall()[0][0]
    )


# ---------------------------------------------------------------- Spark


def spark_quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def spark_schema(columns: list[tuple[str, str]]):
    from pyspark.sql import types as T

    mapping = {
        "int": T.LongType(),
        "int32": T.IntegerType(),
        "float": T.DoubleType(),
        "real": T.FloatType(),
        "str": T.StringType(),
        "date": T.DateType(),
        "ts": T.TimestampType(),
        "bool": T.BooleanType(),
    }

    def spark_type(t: str):
        dec = decimal_of(t)
        return T.DecimalType(*dec) if dec else mapping[t]

    return T.StructType([T.StructField(c, spark_type(t), True) for c, t in columns])


def spark_create(
    spark, table: str, columns: list[tuple[str, str]], rows: list[dict], properties=None,
    upgraded: bool = False,
) -> None:
    """Create an Iceberg table with exact column types and rows (replacing it), with the table
    `properties` ({name: value}) if any; `upgraded`: its rows written at format version 2, then
    the table upgraded to the format `properties` name (its files carry no row lineage)."""
    df = spark.createDataFrame([[r[c] for c, _ in columns] for r in rows], spark_schema(columns))
    writer = df.writeTo(table).using("iceberg")
    version = (properties or {}).get("format-version")
    if upgraded:  # a replace cannot take a table of a later format back to format 2
        spark.sql(f"drop table if exists {table}")
    for name, value in (properties or {}).items():
        writer = writer.tableProperty(name, "2" if upgraded and name == "format-version" else value)
    writer.createOrReplace()
    if upgraded and version:
        spark.sql(f"alter table {table} set tblproperties ('format-version' = '{version}')")


def spark_rows(spark, table: str) -> tuple[list[str], list[dict]]:
    df = spark.table(table)
    return df.columns, [r.asDict() for r in df.collect()]


def spark_exists(spark, schema: str, name: str) -> bool:
    return spark.catalog.tableExists(f"{schema}.{name}")


# ---------------------------------------------------------------- one interface for both


class Engine:
    """What tests need from an engine: typed tables, rows back, and its SQL dialect."""

    name: str
    random_sql: str  # a random double in [0, 1)
    max_threads: int  # --threads the machine affords
    model_config: dict = {}  # config every merge model needs on this engine

    def quote(self, name: str) -> str:
        raise NotImplementedError

    def type_name(self, typ: str) -> str:
        """A logical type (coltypes) in DDL and dbt contracts."""
        return engine_type(typ, self.dialect)

    def source_location(self, schema: str, table: str) -> tuple[str, str]:
        """(schema, identifier) of the relation `source()` made, for a dbt sources entry."""
        return schema, table


class DuckEngine(Engine):
    """A connection to the tests' DuckDB file; close it (or use `with`) when done."""

    name = "duckdb"  # the dbt target
    dialect = "duckdb"  # whose SQL and error messages
    random_sql = "random()"
    max_threads = 4

    def __init__(self):
        self.con = duckdb_connect()

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> DuckEngine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def quote(self, name: str) -> str:
        return duck_quote(name)

    def setup(self, *schemas: str) -> None:
        for s in schemas:
            self.con.execute(f"create schema if not exists {s}")

    def create(
        self, schema: str, table: str, columns: list[tuple[str, str]], rows: list, properties=None,
        upgraded: bool = False,
    ) -> None:
        """`properties`: Spark's table properties; a DuckDB table has none (nor `upgraded`)."""
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


class SparkEngine(Engine):
    name = "spark"
    random_sql = "rand()"
    max_threads = 2
    model_config = {"file_format": "iceberg"}
    dialect = "spark"

    def __init__(self, spark):
        self.spark = spark

    def quote(self, name: str) -> str:
        return spark_quote(name)

    def setup(self, *schemas: str) -> None:
        for s in schemas:
            self.spark.sql(f"create database if not exists {s}")

    def create(
        self, schema: str, table: str, columns: list[tuple[str, str]], rows: list, properties=None,
        upgraded: bool = False,
    ) -> None:
        spark_create(self.spark, f"{schema}.{table}", columns, rows, properties, upgraded)

    def source(self, schema: str, table: str, columns: list[tuple[str, str]], rows: list) -> str:
        """A relation holding `rows` for a model to select from: a global temporary view (dbt's
        session shares this SparkSession), much cheaper than another Iceberg table."""
        df = self.spark.createDataFrame(
            [[r[c] for c, _ in columns] for r in rows], spark_schema(columns)
        )
        df.createOrReplaceGlobalTempView(f"{schema}_{table}")
        return f"global_temp.{schema}_{table}"

    def source_location(self, schema: str, table: str) -> tuple[str, str]:
        return "global_temp", f"{schema}_{table}"

    def drop(self, schema: str, table: str) -> None:
        self.spark.sql(f"drop table if exists {schema}.{table}")
        # the DROP (Spark's v1 command, spark.sql.legacy.useV1Command) leaves the table in the
        # session's Iceberg catalog cache, which dbt's session method shares: a first build's
        # CREATE, which never replaces, would find it there (TABLE_OR_VIEW_ALREADY_EXISTS)
        try:
            self.spark.catalog.refreshTable(f"{schema}.{table}")
        except Exception:  # noqa: BLE001 - not in that cache: nothing to forget
            pass

    def exists(self, schema: str, table: str) -> bool:
        return spark_exists(self.spark, schema, table)

    def rows(self, schema: str, table: str) -> tuple[list[str], list[dict]]:
        return spark_rows(self.spark, f"{schema}.{table}")


# ---------------------------------------------------------------- Spark over a Thrift server


def spark_literal(value, typ: str) -> str:
    """A Spark SQL literal of `value` with the exact Spark type of the logical type `typ`."""
    spark_type = engine_type(typ, "spark")
    if value is None:
        return f"cast(null as {spark_type})"
    if typ == "int":
        return f"{int(value)}L"  # -9223372036854775808L too: the sign is part of the literal
    if typ == "int32":
        return f"cast({int(value)} as int)"
    if typ in ("float", "real") or decimal_of(typ):
        # repr round-trips exactly; the cast reads 'nan', 'inf', '-inf' and '-0.0' as well
        text = repr(float(value)) if typ in ("float", "real") else str(value)
        return f"cast('{text}' as {spark_type})"
    if typ == "str":
        # Spark unescapes backslash sequences in string literals; everything else is taken as is
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if typ == "date":
        return f"date'{value.isoformat()}'"
    if typ == "ts":
        return f"timestamp'{value.isoformat(sep=' ')}'"
    if typ == "bool":
        return "true" if value else "false"
    raise ValueError(f"no Spark literal for type {typ!r}")


class ThriftEngine(Engine):
    """Spark through a Thrift server, as dbt's `spark_thrift` target reaches it: the test process
    has no session of the server, so tables are made and read with SQL over a PyHive connection.
    Statements that return no rows are not fetched (PyHive fails fetching their result)."""

    name = "spark_thrift"
    dialect = "spark"
    random_sql = "rand()"
    max_threads = 4  # the server does the work; dbt's threads overlap the waits for it
    model_config = {"file_format": "iceberg"}

    def __init__(self, port: int, host: str = "localhost"):
        from pyhive import hive

        self.con = hive.connect(host=host, port=port, username="dbt")
        self.cur = self.con.cursor()

    def quote(self, name: str) -> str:
        return spark_quote(name)

    def execute(self, sql: str) -> None:
        self.cur.execute(sql)

    def sql(self, statement: str) -> list[tuple]:
        """Run any statement; the rows of a query, [] for other statements (whose result PyHive
        cannot fetch, and the server flags as a result set all the same)."""
        if statement.lstrip().lower().startswith(("select", "with", "show", "describe", "values")):
            return self.query(statement)[1]
        self.execute(statement)
        return []

    def query(self, sql: str) -> tuple[list[str], list[tuple]]:
        """Rows of a query, typed as a Spark session returns them: DATE columns come as text,
        and FLOAT (float32) ones as the double nearest their shortest text (2.64582355e16 for
        the float32 2.645823549394125e16), which rounding to float32 gives back exactly."""
        import datetime as dt
        import struct

        def float32(v: float) -> float:
            return struct.unpack("f", struct.pack("f", v))[0]

        convert = {"DATE_TYPE": dt.date.fromisoformat, "FLOAT_TYPE": float32}
        self.cur.execute(sql)
        desc = self.cur.description
        fix = {i: convert[d[1]] for i, d in enumerate(desc) if d[1] in convert}
        rows = [
            tuple(fix[i](v) if i in fix and v is not None else v for i, v in enumerate(r))
            for r in self.cur.fetchall()
        ]
        return [d[0] for d in desc], rows

    def setup(self, *schemas: str) -> None:
        for s in schemas:
            self.execute(f"create database if not exists {s}")

    def create(
        self, schema: str, table: str, columns: list[tuple[str, str]], rows: list, properties=None,
        upgraded: bool = False,
    ) -> None:
        """Create an Iceberg table with exact column types and rows (replacing it), with the
        table `properties` ({name: value}) if any (over thrift no table is `upgraded`)."""
        assert not upgraded, "no upgraded tables over thrift"
        relation = f"{schema}.{spark_quote(table)}"
        cols = ", ".join(f"{spark_quote(c)} {engine_type(t, 'spark')}" for c, t in columns)
        props = ", ".join(f"'{k}' = '{v}'" for k, v in (properties or {}).items())
        tblproperties = f" tblproperties ({props})" if props else ""
        self.execute(f"create or replace table {relation} ({cols}) using iceberg{tblproperties}")
        if rows:
            values = ", ".join(
                "(" + ", ".join(spark_literal(r[c], t) for c, t in columns) + ")" for r in rows
            )
            self.execute(f"insert into {relation} values {values}")

    def source(self, schema: str, table: str, columns: list[tuple[str, str]], rows: list) -> str:
        """A relation holding `rows` for a model to select from: a table in `schema` (temporary
        views of this connection are invisible to dbt's)."""
        self.create(schema, table, columns, rows)
        return f"{schema}.{spark_quote(table)}"

    def drop(self, schema: str, table: str) -> None:
        self.execute(f"drop table if exists {schema}.{spark_quote(table)}")

    def exists(self, schema: str, table: str) -> bool:
        _, rows = self.query(f"show tables in {schema} like '{table}'")
        return any(r[1] == table.lower() for r in rows)

    def table(self, relation: str) -> tuple[list[str], list[tuple]]:
        """Every row of a table as it is now. Each server session caches the Iceberg tables it
        has read, so without the refresh this connection would see a table another session
        (dbt's) has since written as it was at our last read."""
        self.execute(f"refresh table {relation}")
        return self.query(f"select * from {relation}")

    def rows(self, schema: str, table: str) -> tuple[list[str], list[dict]]:
        names, rows = self.table(f"{schema}.{spark_quote(table)}")
        return names, [dict(zip(names, r, strict=True)) for r in rows]
