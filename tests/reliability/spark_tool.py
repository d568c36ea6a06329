"""Run in a child process with its own SPARK_STATE_DIR (embedded Derby allows one process per
metastore): set up the kill-test tables, or read the target and run dbt once more.

    python spark_tool.py setup <schema> <target_rows> <source_rows>
    python spark_tool.py check <schema> <project_dir>   # fingerprint, dbt run, fingerprint, reset

Prints one JSON object on the last line of stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[1] / "adapter")]

FINGERPRINT = "select count(*), coalesce(sum(hash(id, v, amount)), 0) from {}"
UPSERT_RESULT = (
    "(select * from {schema}.tgt as t where not exists"
    " (select 1 from {schema}.source as s where s.id = t.id)"
    " union all select * from {schema}.source)"
)


def session():
    from dbt_merge.spark_session import get_spark_session, load_target, spark_conf

    conf = spark_conf(
        load_target(HERE.parents[1] / "integration_tests", "integration_tests", "spark")
    )
    spark = get_spark_session(conf)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def fingerprint(spark, relation: str) -> list[int]:
    return [int(x) for x in spark.sql(FINGERPRINT.format(relation)).collect()[0]]


def setup(schema: str, target_rows: int, source_rows: int) -> dict:
    spark = session()
    spark.sql(f"create database if not exists {schema}")
    spark.sql(
        f"create or replace table {schema}.tgt_pre using iceberg as "
        f"select id, concat('v', id) as v, cast(id as double) as amount from range({target_rows})"
    )
    # Half the source updates existing rows, half inserts new ones.
    first = target_rows - source_rows // 2
    spark.sql(
        f"create or replace table {schema}.source using iceberg as "
        f"select id, concat('new', id) as v, cast(id * 2 as double) as amount "
        f"from range({first}, {first + source_rows})"
    )
    spark.sql(
        f"create or replace table {schema}.tgt using iceberg as select * from {schema}.tgt_pre"
    )
    return {
        "pre": fingerprint(spark, f"{schema}.tgt"),
        "post": fingerprint(spark, UPSERT_RESULT.format(schema=schema)),
    }


def check(schema: str, project_dir: str) -> dict:
    from dbt.cli.main import dbtRunner

    spark = session()
    out = {"after_kill": fingerprint(spark, f"{schema}.tgt")}
    res = dbtRunner().invoke(
        [
            "run",
            "--project-dir",
            project_dir,
            "--profiles-dir",
            str(HERE.parents[1] / "integration_tests"),
            "--target",
            "spark",
        ]
    )
    out["rerun_success"] = bool(res.success)
    out["after_rerun"] = fingerprint(spark, f"{schema}.tgt")
    # Back to the pre-run state for the next kill point.
    spark.sql(
        f"create or replace table {schema}.tgt using iceberg as select * from {schema}.tgt_pre"
    )
    return out


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "setup":
        result = setup(args[0], int(args[1]), int(args[2]))
    else:
        result = check(args[0], args[1])
    print(json.dumps(result))
