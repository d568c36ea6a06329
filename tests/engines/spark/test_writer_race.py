"""Another writer commits to the target while a merge runs (issue 21, class 11), on Iceberg.

In-process Spark (the `spark` fixture), Iceberg tables in the session catalog (`spark_catalog`,
Iceberg's Hive catalog on embedded Derby). Not the `hadoop` catalog: dbt-spark cannot list a
`hadoop` catalog's tables, so a model there is rebuilt instead of merged. The Hive catalog runs
here with its commit lock off, so two commits landing at the same instant may both "succeed";
these tests never commit at the same instant: the other writer commits from inside a dbt event
callback, synchronously, on the dbt thread, before the statement the event announces runs, so
every commit of the other writer has completed before the merge's next statement starts.

The other writer inserts the key the merge's batch counts as new (5), at one of three points:
  before    on the model's first statement: the merge counts the table with the key in it;
  between   just before the write statement (MERGE INTO / INSERT OVERWRITE), after the counts,
            in the same Spark session: the write sees the key, the counts did not;
  during    the same moment, from another Spark session (its own catalog and table cache, as
            another job has): the merge's session still reads the snapshot it counted, so the
            other commit lands between the write's read and its commit.
Each point, for every strategy (and full_merge's INSERT OVERWRITE), on copy-on-write and
merge-on-read tables and copy-on-write tables of format version 3, in one dbt invocation (one
model per case; the callback knows the model
from the event). A run that succeeds has the rows and statistics of merging the table with the
other writer's row in it; a run that fails has committed nothing (the table is the other writer's)
and says why: ours (the table changed since the counts) or Iceberg's ValidationException.
"""

from __future__ import annotations

import pytest
from dbt_helpers import run_dbt
from support.harness import PROFILES_DIR, make_project, model_sql

SCHEMA = "rel_race"
BASE = [(1, "old"), (2, "old"), (3, "old")]
OTHER = (5, "other")
MIXED = [(1, "dbt"), (2, "old"), (5, "dbt")]  # 1 changed, 2 unchanged, 5 new
#: case -> (config, the batch)
CASES = {
    "upsert": ({"strategy": "upsert"}, MIXED),
    "upsert_new": ({"strategy": "upsert"}, [(5, "dbt"), (6, "dbt")]),
    "insert": ({"strategy": "insert"}, MIXED),
    "update": ({"strategy": "update"}, MIXED),
    "full_merge": ({"strategy": "full_merge", "full_merge_write": "merge"}, MIXED),
    "full_overwrite": ({"strategy": "full_merge", "full_merge_write": "overwrite"}, MIXED),
    "deduplicate": ({"strategy": "deduplicate", "dedup_order_by": "v"}, MIXED),
}
#: mode -> (format version, write mode, write.merge.isolation-level): every merge is counted
#: before it writes (the passes) unless the table is set to snapshot isolation, which Iceberg
#: does not check a MERGE against appends under: a merge-on-read one writes once into a branch
#: where the strategy allows it (merge_on_branch), any other merge's MERGE goes into the run's
#: branch (publishes_on_branch); both are published only while main is the snapshot counted
MODES = {"cow": ("2", "copy-on-write", None), "mor": ("2", "merge-on-read", None),
         "v3": ("3", "copy-on-write", None), "cow_si": ("2", "copy-on-write", "snapshot"),
         "mor_si": ("2", "merge-on-read", "snapshot")}
POINTS = ("before", "between", "during")
WRITES = ("merge into", "insert overwrite")
OUR_MESSAGE = "after this run counted its changes on snapshot"
RETRY = "Running the model again is safe"


def merged(strategy: str, table: list[tuple], batch: list[tuple]) -> tuple[list[tuple], dict]:
    """The rows and statistics of merging `batch` into `table` (the README's strategy table)."""
    rows = dict(table)
    stats = {"inserted": 0, "updated": 0, "deleted": 0, "unchanged": 0}
    for key, value in batch:
        if key in rows:
            if strategy == "insert" or rows[key] == value:
                stats["unchanged"] += 1
            else:
                stats["updated"] += 1
                rows[key] = value
        elif strategy != "update":
            stats["inserted"] += 1
            rows[key] = value
    if strategy == "full_merge":
        for key in [k for k in rows if k not in dict(batch)]:
            stats["deleted"] += 1
            del rows[key]
    stats["total"] = len(rows)
    return sorted(rows.items()), stats


@pytest.mark.spark
def test_writer_commits_while_merging(spark, tmp_path):
    spark.sql(f"create database if not exists {SCHEMA}")
    models = {}
    base = ", ".join(f"({k}, '{v}')" for k, v in BASE)
    for case, (config, batch) in CASES.items():
        values = ", ".join(f"({k}, '{v}')" for k, v in batch)
        spark.sql(
            f"create or replace table {SCHEMA}.src_{case} using iceberg as "
            f"select cast(id as int) as id, v from values {values} as t(id, v)"
        )
        for mode, (version, write_mode, isolation) in MODES.items():
            for point in POINTS:
                name = f"{case}__{mode}__{point}"
                isolated = f", 'write.merge.isolation-level'='{isolation}'" if isolation else ""
                spark.sql(
                    f"create or replace table {SCHEMA}.{name} using iceberg "
                    f"tblproperties ('format-version'='{version}', "
                    f"'write.merge.mode'='{write_mode}', "
                    f"'write.update.mode'='{write_mode}', 'write.delete.mode'='{write_mode}'"
                    f"{isolated}) "
                    f"as select cast(id as int) as id, v from values {base} as t(id, v)"
                )
                models[name] = model_sql(
                    {**config, "unique_key": "id", "schema": SCHEMA, "file_format": "iceberg"},
                    f"select * from {SCHEMA}.src_{case}",
                )
    project = make_project(tmp_path / "proj", "writer_race", models)

    # Another session: its own catalog and table cache, as another Spark job would have.
    other = spark.newSession()
    fired: dict[str, str] = {}

    def writer(event) -> None:
        if event.info.name != "SQLQuery":
            return
        name = event.data.node_info.node_name
        if name not in models or name in fired:
            return
        point = name.rsplit("__", 1)[1]
        sql = " ".join(event.data.sql.split()).lower()
        if point == "before" or any(w in sql for w in WRITES):
            session = other if point == "during" else spark
            session.sql(f"insert into {SCHEMA}.{name} values ({OTHER[0]}, '{OTHER[1]}')")
            fired[name] = sql[:60]

    run = run_dbt(["run", "--threads", "1"], project, "spark", PROFILES_DIR, callbacks=[writer])
    assert run.results, run.exception
    problems = []
    for name in models:
        case, mode, point = name.split("__")
        config, batch = CASES[case]
        strategy = config["strategy"]
        spark.sql(f"refresh table {SCHEMA}.{name}")
        query = f"select id, v from {SCHEMA}.{name} order by id"
        rows = [tuple(r) for r in spark.sql(query).collect()]
        with_other = sorted([*BASE, OTHER])
        result = run.result(name)
        if name not in fired:
            problems.append(f"{name}: the other writer never committed ({result.message})")
            continue
        if point == "before":
            want_rows, want_stats = merged(strategy, with_other, batch)
            if str(result.status) != "success":
                problems.append(f"{name}: failed: {result.message}")
            elif run.stats(name) != want_stats:
                problems.append(f"{name}: statistics {run.stats(name)} != {want_stats}")
            if rows != want_rows:
                problems.append(f"{name}: rows {rows} != {want_rows}")
            continue
        # between / during: the run fails, nothing of it committed, the other writer's row kept
        if str(result.status) != "error":
            stats = run.stats(name) if str(result.status) == "success" else result.message
            problems.append(f"{name}: not refused ({stats}), rows {rows}")
            continue
        message = result.message or ""
        if point == "between":
            ok = OUR_MESSAGE in message and RETRY in message
        elif case == "full_overwrite" or mode.endswith("_si"):
            # the overwrite goes into the run's branch, published only onto the counted snapshot:
            # the branch's creation reloads the table, so the overwrite's guard (or, later, the
            # publish) sees the other commit and refuses, nothing published; so does every
            # write into a table set to snapshot isolation, which Iceberg does not check
            ok = OUR_MESSAGE in message and RETRY in message
        else:
            # Iceberg's check at commit; ours when this session's cached table expired meanwhile
            # (a loaded machine), so that the write saw the other commit
            ok = ("ValidationException" in message and "conflicting files" in message) or (
                OUR_MESSAGE in message and RETRY in message
            )
        if not ok or f"'{name}': dbt_merge: model" in message:  # and the prefix once
            problems.append(f"{name}: message {message[:400]}")
        if rows != with_other:
            problems.append(f"{name}: rows {rows} != {with_other} (the table changed)")
    assert not problems, "\n".join(problems)
