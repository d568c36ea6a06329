"""Faults: the dbt process killed (SIGKILL, whole process group incl. Spark's JVM) at several
points of a merge, and a statement that fails midway. Afterwards the target must be readable
and equal to its pre-run state (or, when the kill came after the commit was issued, to the
complete post-run state: never anything in between), and the next run must complete.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from dbt_helpers import run_dbt
from support.harness import PROFILES_DIR, DuckEngine, make_project, model_sql

DBT = str(Path(sys.executable).parent / "dbt")


def _dbt_run_cmd(project: Path, target: str) -> list[str]:
    """`dbt run` of a generated project as a separate process (so it can be killed)."""
    return [DBT, "run", "--project-dir", str(project), "--profiles-dir", str(PROFILES_DIR),
            "--target", target]
HERE = Path(__file__).resolve().parent

# (name, text that appears in dbt.log when the step starts, extra delay before the kill)
DUCKDB_KILL_POINTS = [
    ("staging the SELECT", r"__dbt_merge_\w+_src", 0.0),
    ("checking source rows", "as null_rows_1", 0.0),
    ("classifying", r"__dbt_merge_\w+_chg", 0.0),
    ("deleting replaced rows", "delete from", 0.0),
    ("inserting new row images", "insert into", 0.0),
    ("committing", ": COMMIT", 0.0),
]
SPARK_KILL_POINTS = [
    ("staging the SELECT (cache lazy table)", "cache lazy table", 0.0),
    ("writing the MERGE", "merge into", 0.5),
]  # a third point, 2 s into the MERGE, was dropped to keep CI inside its 90 minutes


def run_until_marker(
    cmd: list[str], env: dict, log: Path, marker: str, delay: float, until=None
) -> dict:
    """Start `cmd` in its own process group; SIGKILL it `delay` s after `marker` (a regular
    expression) is logged (and,
    with `until`, once `until()` is true as well)."""
    log.unlink(missing_ok=True)
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    killed = False
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if log.exists() and re.search(marker, log.read_text(errors="replace")):
            while until and not until() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.002)
            time.sleep(delay)
            killed = proc.poll() is None
            os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.005)
    else:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    text = log.read_text(errors="replace") if log.exists() else ""
    return {
        "killed": killed,
        "rc": proc.returncode,
        "commit_logged": ": COMMIT" in text,
        "merge_done": "merge into" in text and text.rfind("SQL status") > text.rfind("merge into"),
    }


# ------------------------------------------------------------------ DuckDB

DUCK_FP = "select count(*), coalesce(sum(hash(id, v, amount)), 0) from {}"


def _duck_fp(con, relation: str) -> tuple:
    return tuple(con.execute(DUCK_FP.format(relation)).fetchone())


def test_kill_duckdb(tmp_path):
    """SIGKILL a `dbt run` on DuckDB at each step of an upsert of 400k rows into 1M."""
    db = tmp_path / "kill.duckdb"
    env = {**os.environ, "DBT_MERGE_DUCKDB_PATH": str(db)}
    con = duckdb.connect(str(db))
    con.execute("create schema k")
    con.execute(
        "create table k.tgt_pre as select range as id, 'v' || range as v, "
        "range::double as amount from range(1000000)"
    )
    con.execute(
        "create table k.source as select range as id, 'new' || range as v, "
        "(range * 2)::double as amount from range(800000, 1200000)"
    )
    con.execute("create table k.tgt as from k.tgt_pre")
    pre = _duck_fp(con, "k.tgt")
    post = _duck_fp(con, "(from k.tgt anti join k.source using (id) union all from k.source)")
    con.close()
    assert pre != post
    project = make_project(
        tmp_path / "proj",
        "kill_duckdb",
        {
            "tgt": model_sql(
                {"strategy": "upsert", "unique_key": "id", "schema": "k"}, "select * from k.source"
            ),
        },
    )
    cmd = _dbt_run_cmd(project, "duckdb")
    outcomes = []
    for name, marker, delay in DUCKDB_KILL_POINTS:
        run = run_until_marker(cmd, env, project / "logs" / "dbt.log", marker, delay)
        con = duckdb.connect(str(db))
        after_kill = _duck_fp(con, "k.tgt")  # readable
        leftovers = con.execute(
            "select count(*) from duckdb_tables() where table_name like '%__dbt_merge%'"
        ).fetchone()[0]
        con.close()
        assert run["killed"], f"{name}: the run ended before the kill ({run})"
        if run["commit_logged"]:
            assert after_kill in (pre, post), f"{name}: partial merge after kill"
        else:
            assert after_kill == pre, f"{name}: target changed although the run was killed"
        assert leftovers == 0, f"{name}: work tables survived the process"
        rerun = subprocess.run(cmd, env=env, capture_output=True, text=True)
        assert rerun.returncode == 0, f"{name}: next run failed:\n{rerun.stdout[-3000:]}"
        con = duckdb.connect(str(db))
        assert _duck_fp(con, "k.tgt") == post, f"{name}: next run did not complete the merge"
        con.execute("create or replace table k.tgt as from k.tgt_pre")
        con.close()
        outcomes.append((name, "post" if after_kill == post else "pre"))
    print("duckdb kill outcomes:", outcomes)


def test_statement_fails_midway_duckdb(tmp_path):
    """The insert of the new row images fails (a value breaks the target's CHECK constraint, which
    no check of the package reads) after the delete of the replaced rows ran: the transaction must
    roll back."""
    eng = DuckEngine()
    eng.setup("rel_fault")
    eng.con.execute(
        "create or replace table rel_fault.mid (id bigint, amount integer check (amount < 1000000))"
    )
    eng.con.execute("insert into rel_fault.mid select range, range from range(100000)")
    eng.con.execute(
        "create or replace table rel_fault.mid_src as select range as id, "
        "case when range = 99990 then 5000000 else range * 2 end::integer as amount "
        "from range(50000, 150000)"
    )
    before = _duck_fp_cols(eng.con, "rel_fault.mid")
    project = make_project(
        tmp_path / "proj",
        "mid_duckdb",
        {
            "mid": model_sql(
                {"strategy": "upsert", "unique_key": "id", "schema": "rel_fault"},
                "select * from rel_fault.mid_src",
            ),
        },
    )
    run = run_dbt(["run"], project, "duckdb", PROFILES_DIR)
    message = run.error("mid")
    assert "Constraint Error" in message and "CHECK" in message, message
    log = (project / "logs" / "dbt.log").read_text()
    assert log.find("delete from") < log.find("insert into") > 0, "the failure was not midway"
    assert _duck_fp_cols(eng.con, "rel_fault.mid") == before, "failed merge changed the target"
    # Fix the data; the next run completes.
    eng.con.execute("update rel_fault.mid_src set amount = 0 where id = 99990")
    run = run_dbt(["run"], project, "duckdb", PROFILES_DIR)
    assert run.stats("mid") == {
        "inserted": 50000,
        "updated": 50000,
        "deleted": 0,
        "unchanged": 0,
        "total": 150000,
    }
    eng.close()


def _duck_fp_cols(con, relation: str) -> tuple:
    return tuple(con.execute(f"select count(*), sum(hash(id, amount)) from {relation}").fetchone())


# ------------------------------------------------------------------ Spark


def _spark_tool(state: Path, *args: str) -> dict:
    env = {**os.environ, "SPARK_STATE_DIR": str(state)}
    res = subprocess.run(
        [sys.executable, str(HERE / "spark_tool.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.spark
def test_kill_spark(tmp_path):
    """SIGKILL a `dbt run` on Spark/Iceberg (python + JVM) at several points of an upsert.
    The child processes use their own SPARK_STATE_DIR: Derby allows one process per metastore."""
    state = tmp_path / "spark_state"
    state.mkdir()
    fp = _spark_tool(state, "setup", "k", "200000", "100000")
    pre, post = fp["pre"], fp["post"]
    assert pre != post
    project = make_project(
        tmp_path / "proj",
        "kill_spark",
        {
            "tgt": model_sql(
                {"strategy": "upsert", "unique_key": "id", "schema": "k", "file_format": "iceberg"},
                "select * from k.source",
            ),
        },
    )
    env = {**os.environ, "SPARK_STATE_DIR": str(state)}
    cmd = _dbt_run_cmd(project, "spark")
    outcomes = []
    for name, marker, delay in SPARK_KILL_POINTS:
        run = run_until_marker(cmd, env, project / "logs" / "dbt.log", marker, delay)
        assert run["killed"], f"{name}: the run ended before the kill"
        check = _spark_tool(state, "check", "k", str(project))
        if run["merge_done"] or marker == "merge into":
            # Killed once the MERGE was sent: its commit may land before the kill (the log line
            # saying so may not), so the table is either as it was or fully merged.
            assert check["after_kill"] in (pre, post), f"{name}: partial merge after kill"
        else:
            assert check["after_kill"] == pre, f"{name}: target changed although the run was killed"
        assert check["rerun_success"], f"{name}: next run failed"
        assert check["after_rerun"] == post, f"{name}: next run did not complete the merge"
        outcomes.append((name, "post" if check["after_kill"] == post else "pre"))
    print("spark kill outcomes:", outcomes)


@pytest.mark.spark
def test_statement_fails_midway_spark(spark, tmp_path):
    """The MERGE fails while writing (a NULL reaches the Iceberg table's NOT NULL column, which
    Spark checks row by row at run time): no snapshot is committed and the target is unchanged."""
    spark.sql("create database if not exists rel_fault")
    spark.sql("drop table if exists rel_fault.mid")
    spark.sql("create table rel_fault.mid (id bigint, amount int not null) using iceberg")
    spark.sql("insert into rel_fault.mid select id, cast(id as int) from range(20000)")
    spark.sql(
        "create or replace table rel_fault.mid_src using iceberg as select id, "
        "case when id = 29990 then null else cast(id * 2 as int) end as amount "
        "from range(10000, 30000)"
    )
    fp = "select count(*), sum(hash(id, amount)) from rel_fault.mid"
    before = spark.sql(fp).collect()[0]
    snapshots = spark.sql("select count(*) from rel_fault.mid.snapshots").collect()[0][0]
    project = make_project(
        tmp_path / "proj",
        "mid_spark",
        {
            "mid": model_sql(
                {
                    "strategy": "upsert",
                    "unique_key": "id",
                    "schema": "rel_fault",
                    "file_format": "iceberg",
                },
                "select * from rel_fault.mid_src",
            ),
        },
    )
    run = run_dbt(["run"], project, "spark", PROFILES_DIR)
    message = run.error("mid")
    assert "null" in message.lower() and "amount" in message.lower(), message
    spark.sql("refresh table rel_fault.mid")
    assert spark.sql(fp).collect()[0] == before, "failed merge changed the target"
    assert spark.sql("select count(*) from rel_fault.mid.snapshots").collect()[0][0] == snapshots
    spark.sql("update rel_fault.mid_src set amount = 0 where id = 29990")
    run = run_dbt(["run"], project, "spark", PROFILES_DIR)
    assert run.stats("mid") == {
        "inserted": 10000,
        "updated": 10000,
        "deleted": 0,
        "unchanged": 0,
        "total": 30000,
    }


# Parquet tables have no commit: the merge fills a work table, then INSERT OVERWRITE rewrites the
# affected partitions (the whole table when it has none). (layout, kill points): the target
# unpartitioned, then partitioned by p = id % 16 (every partition is affected). A kill point is
# (name, text logged when the step starts, what to wait for in the table's folder, delay).
PARQUET_KILL_POINTS = [
    ("", [("filling the work table", "using parquet tblproperties", None, 0.5),
          # Spark deletes the files of a table without partitions before it writes it again
          ("overwriting the table, its files deleted", "insert overwrite table", "no data", 0.0)]),
    # the new partitions are written under .spark-staging-*, then moved in one by one
    ("p", [("overwriting the partitions, job running", "insert overwrite table", "staging", 0.0)]),
]


def _table_folder_is(folder: Path, what: str):
    """A check of the table's folder: 'no data' (no data file at its top: the job's own files are
    in _temporary) or 'staging' (a .spark-staging folder: the new partitions being written)."""
    def check() -> bool:
        try:
            names = [p.name for p in folder.iterdir()]
        except FileNotFoundError:
            names = []
        if what == "no data":
            return not any(n.startswith("part-") for n in names)
        return any(n.startswith(".spark-staging") for n in names)

    return check


@pytest.mark.spark
@pytest.mark.parametrize(
    "partition,points", PARQUET_KILL_POINTS, ids=["unpartitioned", "partitioned"]
)
def test_kill_spark_parquet(tmp_path, partition, points):
    """SIGKILL a `dbt run` upserting 100k rows into a 200k-row parquet table. Before the overwrite
    starts the target is untouched; during it a reader may see the table partly rewritten (or, on
    a table without partitions, empty: Spark deletes its files before writing). The next run
    finishes the interrupted write from the work table, then merges: the target is then exactly
    the merged table, and no work table is left."""
    state = tmp_path / "spark_state"
    state.mkdir()
    layout = ["parquet", partition] if partition else ["parquet"]
    fp = _spark_tool(state, "setup", "k", "200000", "100000", *layout)
    pre, post = fp["pre"], fp["post"]
    config = {"strategy": "upsert", "unique_key": "id", "schema": "k", "file_format": "parquet"}
    if partition:
        config["partition_by"] = partition
    project = make_project(
        tmp_path / "proj", "kill_parquet", {"tgt": model_sql(config, "select * from k.source")}
    )
    env = {**os.environ, "SPARK_STATE_DIR": str(state)}
    cmd = _dbt_run_cmd(project, "spark")
    folder = state / "warehouse" / "k.db" / "tgt"
    outcomes = []
    for name, marker, wait_for, delay in points:
        until = _table_folder_is(folder, wait_for) if wait_for else None
        run = run_until_marker(cmd, env, project / "logs" / "dbt.log", marker, delay, until)
        assert run["killed"], f"{name}: the run ended before the kill"
        log = (project / "logs" / "dbt.log").read_text(errors="replace")
        check = _spark_tool(state, "check", "k", str(project), *layout)
        seen = check["after_kill"]
        if "insert overwrite table" not in log:
            assert seen == pre, f"{name}: target changed before the overwrite started"
        if wait_for == "no data":
            assert seen[0] == 0, f"{name}: the kill was meant to find the table emptied"
        assert check["rerun_success"], f"{name}: next run failed"
        assert check["after_rerun"] == post, f"{name}: next run did not complete the merge"
        assert check["leftovers"] == [], f"{name}: work tables left: {check['leftovers']}"
        state_seen = "pre" if seen == pre else "post" if seen == post else f"{seen[0]} rows"
        outcomes.append((name, state_seen))
    print(f"parquet ({partition or 'unpartitioned'}) kill outcomes:", outcomes)
