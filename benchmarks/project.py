"""A throw-away dbt project that installs this package and holds one model per measured method."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
STRATEGIES = ("upsert", "insert", "update", "full_merge", "deduplicate")
#: dbt's built-in incremental strategies per engine (model name -> incremental_strategy).
BUILTINS = {
    "duckdb": {"dbt_merge": "merge", "dbt_delete_insert": "delete+insert"},
    "spark": {"dbt_merge": "merge"},
}

SPARK_CONF = {
    "spark.master": "local[2]",
    "spark.jars": "{{ env_var('ICEBERG_JAR') }}",
    "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
    "spark.sql.catalog.spark_catalog.type": "hive",
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


def schema(engine: str) -> str:
    return "main" if engine == "duckdb" else "bench"


def write_project(
    root: Path, engine: str, duckdb_path: Path | None = None, package: Path = REPO
) -> None:
    """Write the project, its profile and models to `root`."""
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
            "server_side_parameters": SPARK_CONF,
        },
    }
    (root / "profiles.yml").write_text(
        yaml.safe_dump({"merge_bench": {"target": engine, "outputs": {engine: outputs[engine]}}})
    )
    source = f"select * from {schema(engine)}.bench_src"

    def where(model: str) -> str:
        # DuckDB: each model's table is main.target of its own attached database (see engines.py)
        return f", database='{model}', alias='target'" if engine == "duckdb" else ""

    for strategy in STRATEGIES:
        extra = ", dedup_order_by='updated_at desc'" if strategy == "deduplicate" else ""
        (root / "models" / f"ours_{strategy}.sql").write_text(
            f"{{{{ config(materialized='merge', strategy='{strategy}', "
            f"unique_key='id'{extra}{where('ours_' + strategy)}) }}}}\n"
            f"{source}\n"
        )
    for model, builtin in BUILTINS[engine].items():
        (root / "models" / f"{model}.sql").write_text(
            "{{ config(materialized='incremental', "
            f"incremental_strategy='{builtin}', unique_key='id'{where(model)}) }}}}\n"
            f"{source}\n"
        )


@dataclass
class ModelRun:
    seconds: float
    message: str
    error: str | None


class DbtProject:
    """Runs dbt in this process (dbt's programmatic runner), one model at a time."""

    def __init__(self, root: Path, engine: str):
        self.root, self.engine = root, engine
        os.environ["DBT_PROFILES_DIR"] = str(root)
        os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")

    def _invoke(self, args: list[str]):
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
        return dbtRunner().invoke(cli)

    def deps(self) -> None:
        res = self._invoke(["deps"])
        if not res.success:
            raise RuntimeError(f"dbt deps failed: {res.exception}")

    def run(self, model: str) -> ModelRun:
        """Run one model; seconds = dbt's own timing of the model's execute phase."""
        res = self._invoke(["run", "--select", model])
        results = list(getattr(res.result, "results", None) or [])
        if not results:
            raise RuntimeError(f"dbt run {model}: no result ({res.exception})")
        r = results[0]
        execute = [t for t in r.timing if t.name == "execute"]
        seconds = (
            (execute[0].completed_at - execute[0].started_at).total_seconds()
            if execute
            else r.execution_time
        )
        message = (r.adapter_response or {}).get("_message") or r.message or ""
        error = None if str(r.status) == "success" else (r.message or str(r.status))
        return ModelRun(seconds, message, error)
