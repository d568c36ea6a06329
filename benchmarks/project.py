"""A throw-away dbt project that installs this package and holds one model per measured method."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from .data import COLUMNS, KEY

REPO = Path(__file__).resolve().parent.parent
STRATEGIES = ("upsert", "insert", "update", "full_merge", "deduplicate")
#: Strategies with matched rows to update, where the change-detection options apply.
UPDATING = ("upsert", "update", "full_merge", "deduplicate")
#: dbt's built-in incremental strategies per engine (model name -> incremental_strategy).
BUILTINS = {
    "duckdb": {"dbt_merge": "merge", "dbt_delete_insert": "delete+insert"},
    "spark": {"dbt_merge": "merge"},
}
#: Workloads a dbt built-in cannot express (said in the report instead of a row).
NOT_EXPRESSIBLE = {
    ("spark", "conditional"): "dbt-spark's merge has no update condition",
    ("spark", "cdc"): "dbt-spark's merge has no delete clause",
}
#: Iceberg table properties of the merge-on-read targets (Spark): updates and deletes write
#: delete files instead of rewriting data files.
MOR_PROPERTIES = {
    "write.merge.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.delete.mode": "merge-on-read",
}
#: Iceberg format version 3 (row lineage, deletion vectors), copy-on-write.
V3_PROPERTIES = {"format-version": "3"}
#: Spark model-name suffix -> the Iceberg table properties of its target ('' none).
TABLE_KINDS = {"": None, "_mor": MOR_PROPERTIES, "_v3": V3_PROPERTIES}
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
NON_KEY = [c for c in COLUMNS if c != KEY]
NEWER = "DBT_INTERNAL_SOURCE.updated_at > DBT_INTERNAL_DEST.updated_at"
DELETE_OP = "DBT_INTERNAL_SOURCE.op = 'D'"
#: Model name suffix -> the options it adds to an `ours_<strategy>` model.
OPTIONS = {
    "": {},
    "_check": {"merge_check_columns": ["updated_at"]},
    "_always": {"detect_unchanged": False},
    "_if_newer": {"merge_update_condition": NEWER},
    "_cdc": {"delete_condition": DELETE_OP},
}
#: What the statistics of a model with an option must show, else the option was not applied
#: (dbt ignores a config it does not know): model suffix -> (regex on the message, why).
EXPECT = {
    "_always": (r"(?<![0-9])0 unchanged", "detect_unchanged=false leaves no row unchanged"),
    "_if_newer": (r"held back", "merge_update_condition reports the rows held back"),
    "_cdc": (r"[1-9][0-9]* deleted", "delete_condition deletes the 'D' rows"),
}

SPARK_CONF = {
    "spark.master": "local[2]",
    "spark.jars": "{{ env_var('ICEBERG_JAR') }}",
    "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
    "spark.sql.catalog.spark_catalog.type": "hive",
    # as the tests' and the example's profiles: v3 copy-on-write MERGE and the write-once path
    "spark.sql.extensions": ICEBERG_EXTENSIONS,
    "spark.hadoop.iceberg.engine.hive.lock-enabled": "false",
    "spark.sql.legacy.useV1Command": "true",
    "spark.hadoop.javax.jdo.option.ConnectionURL": (
        "jdbc:derby:;databaseName={{ env_var('SPARK_STATE_DIR') }}/metastore_db;create=true"
    ),
    "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
    "spark.hadoop.hive.metastore.schema.verification": "false",
    "spark.sql.warehouse.dir": "{{ env_var('SPARK_STATE_DIR') }}/warehouse",
    # The JVM's own defaults (C2 JIT, G1): the tests start the JVM with C1 only and the serial GC
    # to start fast, which made every Spark method here 3-6x slower than a production driver.
    "spark.driver.extraJavaOptions": "-Dderby.system.home={{ env_var('SPARK_STATE_DIR') }}",
    "spark.driver.memory": "4g",
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


#: The benchmark's engines: name -> the SQL dialect (and dbt adapter) it shares with others.
#: `spark`: dbt-spark's session method in this process (local[2]); `spark_thrift`: dbt-spark's
#: thrift method against a Thrift server on a standalone cluster (benchmarks/engines.py).
DIALECT = {"duckdb": "duckdb", "spark": "spark", "spark_thrift": "spark"}
#: The port of the benchmark cluster's Thrift server, for the spark_thrift profile.
THRIFT_PORT_ENV = "DBT_MERGE_BENCH_THRIFT_PORT"


def family(engine: str) -> str:
    """The dialect of `engine` (spark_thrift speaks Spark SQL through dbt-spark, as spark)."""
    return DIALECT[engine]


def schema(engine: str) -> str:
    return "main" if engine == "duckdb" else "bench"


def write_project(
    root: Path,
    engine: str,
    duckdb_path: Path | None = None,
    package: Path = REPO,
    spark_conf: dict[str, str] | None = None,
) -> None:
    """Write the project, its profile and models to `root` (`spark_conf` adds to or overrides
    the session's Spark configuration)."""
    (root / "models").mkdir(parents=True, exist_ok=True)
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump(
            {
                "name": "merge_bench",
                "version": "0.1.0",
                "config-version": 2,
                "profile": "merge_bench",
                "model-paths": ["models"],
                "models": {
                    "merge_bench": {
                        "+file_format": "{{ 'iceberg' if target.type == 'spark' else none }}"
                    }
                },
            }
        )
    )
    (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(package)}]}))
    outputs = {
        "duckdb": {"type": "duckdb", "path": str(duckdb_path), "schema": "main", "threads": 1},
        "spark": {
            "type": "spark",
            "method": "session",
            "host": "NA",
            "schema": "bench",
            "threads": 1,
            "server_side_parameters": SPARK_CONF | (spark_conf or {}),
        },
        # as the README's thrift profile; poll_interval is dbt-spark's wait between polls of a
        # running statement, in whole seconds (its default of 5 slows every statement down)
        "spark_thrift": {
            "type": "spark",
            "method": "thrift",
            "host": "localhost",
            "port": f"{{{{ env_var('{THRIFT_PORT_ENV}') | int }}}}",
            "user": "dbt",
            "schema": "bench",
            "threads": 1,
            "connect_retries": 0,
            "connect_timeout": 10,
            "poll_interval": 1,
        },
    }
    (root / "profiles.yml").write_text(
        yaml.safe_dump({"merge_bench": {"target": engine, "outputs": {engine: outputs[engine]}}})
    )
    source = f"select * from {schema(engine)}.bench_src"
    for model, config in models(engine).items():
        if engine == "duckdb":
            # each model's table is main.target of its own attached database (see engines.py)
            config = config | {"database": model, "alias": "target"}
        args = ", ".join(f"{k}={_jinja(v)}" for k, v in config.items())
        (root / "models" / f"{model}.sql").write_text(f"{{{{ config({args}) }}}}\n{source}\n")


def models(engine: str) -> dict[str, dict]:
    """Every model of the benchmark project: name -> its config."""
    out: dict[str, dict] = {}
    for strategy in STRATEGIES:
        base = {"materialized": "merge", "strategy": strategy, "unique_key": "id"}
        if strategy == "deduplicate":
            base["dedup_order_by"] = "updated_at desc"
        if strategy == "full_merge":
            # an increment is a small part of the table: full_merge deletes the rest (95%+),
            # which the mass-delete guard refuses by default; the snapshot has its own model
            out["ours_full_merge_guarded"] = dict(base)
            base["max_delete_fraction"] = 1
        suffixes = [""] + (["_check", "_always"] if strategy in UPDATING else [])
        suffixes += ["_if_newer", "_cdc"] if strategy == "upsert" else []
        for suffix in suffixes:
            out[f"ours_{strategy}{suffix}"] = base | OPTIONS[suffix]
    for model, builtin in BUILTINS[family(engine)].items():
        out[model] = {
            "materialized": "incremental",
            "incremental_strategy": builtin,
            "unique_key": "id",
        }
    if family(engine) == "spark":
        # full_merge as one MERGE INTO whatever the counts, and models of merge-on-read tables
        out["ours_full_merge_merge"] = out["ours_full_merge"] | {"full_merge_write": "merge"}
        # every strategy's model on merge-on-read and v3 tables (benchmarks.compare --mor/--v3)
        for model in [f"ours_{s}" for s in STRATEGIES] + ["ours_full_merge_guarded", "dbt_merge"]:
            for suffix, properties in TABLE_KINDS.items():
                if properties:
                    out[f"{model}{suffix}"] = out[model] | {"tblproperties": properties}
    if engine == "duckdb":
        merge = out["dbt_merge"]
        out["dbt_merge_if_newer"] = merge | {"merge_update_condition": NEWER}
        source = [f"DBT_INTERNAL_SOURCE.{c}" for c in COLUMNS]
        out["dbt_merge_cdc"] = merge | {
            "merge_clauses": {
                "when_matched": [
                    {"action": "delete", "condition": DELETE_OP},
                    {"action": "update", "mode": "explicit", "update": {"include": NON_KEY}},
                ],
                "when_not_matched": [
                    {
                        "action": "insert",
                        "mode": "explicit",
                        "condition": f"not ({DELETE_OP})",
                        "insert": {"columns": list(COLUMNS), "values": source},
                    }
                ],
            }
        }
        out["dbt_table"] = {"materialized": "table"}
    return out


def expectation(model: str) -> tuple[str, str] | None:
    """(regex, why) the statistics of `model` must match, if it sets an option we can see."""
    for suffix, expect in EXPECT.items():
        if model.endswith(suffix):
            return expect
    return None


def _jinja(value) -> str:
    """A Python value as a Jinja literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_jinja(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_jinja(k)}: {_jinja(v)}" for k, v in value.items()) + "}"
    return str(value)


@dataclass
class ModelRun:
    seconds: float
    message: str
    error: str | None


def execute_seconds(result) -> float:
    """dbt's own timing of a node's execute phase (its first statement to its commit)."""
    execute = [t for t in result.timing if t.name == "execute"]
    if not execute:
        return result.execution_time
    return (execute[0].completed_at - execute[0].started_at).total_seconds()


class DbtProject:
    """Runs dbt in this process (dbt's programmatic runner), one model at a time."""

    def __init__(self, root: Path, engine: str):
        self.root, self.engine = root, engine
        os.environ["DBT_PROFILES_DIR"] = str(root)
        os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")

    def invoke(self, args: list[str], callbacks: list | None = None):
        """One dbt command in this process; `callbacks` receive dbt's events."""
        from dbt.cli.main import dbtRunner

        cli = [
            *args,
            "--project-dir",
            str(self.root),
            "--profiles-dir",
            str(self.root),
            "--target",
            self.engine,
            "--quiet",
        ]
        return dbtRunner(callbacks=callbacks or []).invoke(cli)

    def deps(self) -> None:
        res = self.invoke(["deps"])
        if not res.success:
            raise RuntimeError(f"dbt deps failed: {res.exception}")

    def run(
        self, model: str, args: tuple[str, ...] = (), callbacks: list | None = None
    ) -> ModelRun:
        """Run one model; seconds = dbt's own timing of the model's execute phase."""
        res = self.invoke(["run", "--select", model, *args], callbacks)
        results = list(getattr(res.result, "results", None) or [])
        if not results:
            raise RuntimeError(f"dbt run {model}: no result ({res.exception})")
        r = results[0]
        seconds = execute_seconds(r)
        message = (r.adapter_response or {}).get("_message") or r.message or ""
        error = None if str(r.status) == "success" else (r.message or str(r.status))
        return ModelRun(seconds, message, error)
