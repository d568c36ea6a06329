"""Run in a child process with its own SPARK_STATE_DIR (embedded Derby allows one process per
metastore): set up the kill-test tables, or read the target and run dbt once more.

    python spark_tool.py setup <schema> <target_rows> <source_rows> [<format> [<partition>]]
    python spark_tool.py check <schema> <project_dir> [<format> [<partition>]]
        # fingerprint, dbt run, fingerprint, reset

<format> is the target's (iceberg by default); <partition> a column `p` (id % 16) to partition
it by.

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
    from dbt_merge.spark.profile import get_spark_session, load_target, spark_conf

    conf = spark_conf(
        load_target(HERE.parents[1] / "integration_tests", "integration_tests", "spark")
    )
    spark = get_spark_session(conf)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def fingerprint(spark, relation: str) -> list[int]:
    return [int(x) for x in spark.sql(FINGERPRINT.format(relation)).collect()[0]]


def create_target(spark, schema: str, fmt: str, partition: str | None) -> None:
    """{schema}.tgt as a copy of {schema}.tgt_pre, in `fmt`, partitioned by `partition`."""
    if fmt == "iceberg" and not partition:
        spark.sql(
            f"create or replace table {schema}.tgt using iceberg as select * from {schema}.tgt_pre"
        )
        return
    spark.sql(f"drop table if exists {schema}.tgt")
    parts = f" partitioned by ({partition})" if partition else ""
    spark.sql(
        f"create table {schema}.tgt using {fmt}{parts} as select * from {schema}.tgt_pre"
    )


def setup(
    schema: str, target_rows: int, source_rows: int, fmt: str = "iceberg", partition: str = ""
) -> dict:
    spark = session()
    spark.sql(f"create database if not exists {schema}")
    p = ", id % 16 as p" if partition else ""
    spark.sql(
        f"create or replace table {schema}.tgt_pre using iceberg as select id, concat('v', id)"
        f" as v, cast(id as double) as amount{p} from range({target_rows})"
    )
    # Half the source updates existing rows, half inserts new ones.
    first = target_rows - source_rows // 2
    spark.sql(
        f"create or replace table {schema}.source using iceberg as "
        f"select id, concat('new', id) as v, cast(id * 2 as double) as amount{p} "
        f"from range({first}, {first + source_rows})"
    )
    create_target(spark, schema, fmt, partition or None)
    return {
        "pre": fingerprint(spark, f"{schema}.tgt"),
        "post": fingerprint(spark, UPSERT_RESULT.format(schema=schema)),
    }


def check(schema: str, project_dir: str, fmt: str = "iceberg", partition: str = "") -> dict:
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
    spark.sql(f"refresh table {schema}.tgt")
    out["after_rerun"] = fingerprint(spark, f"{schema}.tgt")
    out["leftovers"] = [
        r.tableName
        for r in spark.sql(f"show tables in {schema}").collect()
        if "__dbt_merge" in r.tableName
    ]
    # Back to the pre-run state for the next kill point.
    create_target(spark, schema, fmt, partition or None)
    return out


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "setup":
        result = setup(args[0], int(args[1]), int(args[2]), *args[3:])
    else:
        result = check(*args)
    print(json.dumps(result))
