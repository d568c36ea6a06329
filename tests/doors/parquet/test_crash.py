"""Crash safety: a merge process killed with SIGKILL at any point leaves a dataset that a reader
of `root/**/*.parquet` sees either exactly as before or exactly as after the merge (same rows,
none missing, none doubled), and the next merge completes.

Each kill runs the merge in a child process on a fresh copy of the dataset:
- at each named point of the commit (commit.checkpoint: after the new files are written,
  while the folder is rebuilt with hard links, just before and just after the swap), where
  the outcome is known exactly (before the swap: the old dataset; after: the new one);
- at spread-out times after the merge started (during staging, the checks, the COPY, ...).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dbt_merge.parquet import merge_with_report as run_merge

ROOT = Path(__file__).resolve().parents[3]

CHILD = r"""
import json, os, signal, sys
import pyarrow.parquet as pq
from dbt_merge.parquet import commit, run_merge

source, target, point, args = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
if point not in ("timed", "none"):
    def checkpoint(name):
        if name == point:
            os.kill(os.getpid(), signal.SIGKILL)
    commit.checkpoint = checkpoint
table = pq.read_table(source)
print("start", flush=True)
run_merge(table, target, **args)
print("done", flush=True)
"""

NAMED_POINTS = [
    ("written", "before"),  # new files written in the work folder
    ("mirroring", "before"),  # rebuilding the swapped folder with hard links
    ("before_swap", "before"),
    ("after_swap", "after"),  # swapped, the old folder not yet deleted
]


def content(root: Path, hive: bool) -> tuple:
    """What a reader of root/**/*.parquet sees: row count and an order-free hash of the rows."""
    con = duckdb.connect()
    pattern = str(root / "**" / "*.parquet")
    options = "union_by_name = true, hive_partitioning = " + ("true" if hive else "false")
    got = con.execute(
        f"select count(*), sum(hash(id, v, amount{', region' if hive else ''}))"
        f" from read_parquet('{pattern}', {options})"
    ).fetchone()
    con.close()
    return tuple(got)


def make_data(tmp: Path, hive: bool) -> tuple[Path, Path, dict]:
    n = 120_000
    ids = pa.array(range(n), pa.int64())
    base = {
        "id": ids,
        "v": pa.array([f"v{i}" for i in range(n)]),
        "amount": pa.array([float(i) for i in range(n)]),
    }
    if hive:
        base["region"] = pa.array([["eu", "us", "ap"][i % 3] for i in range(n)])
    pristine = tmp / "pristine"
    args = {"key_columns": "id", "rows_per_file": 15_000, "durable": False}
    if hive:
        args["partition_by"] = "region"
    run_merge(pa.table(base), pristine, **args)
    # the increment: updates in two files' key range, inserts beyond the end
    upd = list(range(20_000, 40_000)) + list(range(n, n + 5_000))
    inc = {
        "id": pa.array(upd, pa.int64()),
        "v": pa.array([f"new{i}" for i in upd]),
        "amount": pa.array([i * 2.0 for i in upd]),
    }
    if hive:
        inc["region"] = pa.array([["eu", "us", "ap"][i % 3] for i in upd])
    source = tmp / "source.parquet"
    pq.write_table(pa.table(inc), source)
    args.pop("partition_by", None)
    return pristine, source, args


def start_child(source: Path, target: Path, point: str, args: dict) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "adapter")}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(source), str(target), point, json.dumps(args)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def fresh_copy(pristine: Path, target: Path) -> None:
    for path in (target, target.parent / f".{target.name}.dbt_merge"):
        shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(pristine, target)


@pytest.mark.parametrize(
    ("strategy", "hive", "timed_kills"),
    [("upsert", False, 6), ("upsert", True, 3), ("full_merge", False, 3)],
    ids=["upsert-flat", "upsert-hive", "full_merge-flat"],
)
def test_kill_at_each_step(tmp_path, strategy, hive, timed_kills):
    pristine, source, args = make_data(tmp_path, hive)
    args = {**args, "strategy": strategy, "max_delete_fraction": 1.0}
    target = tmp_path / "ds"
    before = content(pristine, hive)
    # the merge once, undisturbed, in a child process as the killed ones run: its duration
    fresh_copy(pristine, target)
    child = start_child(source, target, "none", args)
    assert child.stdout.readline().strip() == "start"
    started = time.monotonic()
    assert child.stdout.readline().strip() == "done", child.stderr.read()[-2000:]
    duration = time.monotonic() - started
    child.wait(timeout=60)
    after = content(target, hive)
    assert before != after

    outcomes = []
    for point, expected in NAMED_POINTS:
        fresh_copy(pristine, target)
        child = start_child(source, target, point, args)
        child.wait(timeout=300)
        assert child.returncode == -signal.SIGKILL, f"{point}: {child.stderr.read()[-2000:]}"
        seen = content(target, hive)
        assert seen == (before if expected == "before" else after), f"killed at {point}"
        outcomes.append((point, expected))
        _next_merge_completes(source, target, args, hive, after)

    # kills at spread-out times of the merge (whatever step it is in)
    for i in range(timed_kills):
        delay = duration * (i + 0.5) / timed_kills
        fresh_copy(pristine, target)
        child = start_child(source, target, "timed", args)
        assert child.stdout.readline().strip() == "start"
        time.sleep(delay)
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=300)
        seen = content(target, hive)
        assert seen in (before, after), f"killed {delay:.2f} s into the merge"
        outcomes.append((f"t+{delay:.2f}s", "after" if seen == after else "before"))
        _next_merge_completes(source, target, args, hive, after)
    print(f"{strategy} {'hive' if hive else 'flat'} kills (merge {duration:.2f} s):", outcomes)


def _next_merge_completes(source: Path, target: Path, args: dict, hive: bool, after: tuple):
    run_merge(pq.read_table(source), target, **args)
    assert content(target, hive) == after, "the next merge did not complete the merge"
    work = target.parent / f".{target.name}.dbt_merge"
    assert not list(work.glob("tx-*")), "the next merge left work files behind"


def test_kill_while_merging_into_a_partition_folder_of_a_larger_dataset(tmp_path):
    """A merge into `sales/d=1`, one partition folder of the dataset `sales`, killed at each
    named point: readers of `sales/**/*.parquet` see the rows before or after it, exactly, and
    nothing of the merge's lies inside `sales` (its work folder is next to `sales`). Before:
    the work folder was `sales/.d=1.dbt_merge`, and a kill after the swap left the old folder
    there, every changed row twice for those readers (or new files, before the swap)."""
    pristine = tmp_path / "pristine"
    rows = {"id": pa.array(range(3000), pa.int64()), "v": pa.array([f"v{i}" for i in range(3000)]),
            "amount": pa.array([float(i) for i in range(3000)])}
    (pristine / "d=1").mkdir(parents=True)
    (pristine / "d=2").mkdir()
    run_merge(pa.table(rows), pristine / "d=1", "id", rows_per_file=500, durable=False)
    pq.write_table(pa.table(rows).slice(0, 1000), pristine / "d=2" / "other.parquet")
    for work in (tmp_path / ".pristine.dbt_merge", pristine / ".d=1.dbt_merge"):
        shutil.rmtree(work, ignore_errors=True)  # (where releases before this one kept it)
    upd = list(range(500, 1500)) + list(range(3000, 3200))
    source = tmp_path / "source.parquet"
    pq.write_table(pa.table({"id": pa.array(upd, pa.int64()),
                             "v": pa.array([f"new{i}" for i in upd]),
                             "amount": pa.array([i * 2.0 for i in upd])}), source)
    sales = tmp_path / "sales"
    args = {"key_columns": "id", "rows_per_file": 500, "durable": False}

    def fresh() -> None:
        for path in (sales, tmp_path / ".sales.dbt_merge"):
            shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(pristine, sales)

    def seen() -> tuple:
        assert [p for p in sales.rglob("*") if not p.relative_to(sales).parts[0].startswith(
            "d=")] == [], "something of the merge inside the larger dataset"
        return content(sales, hive=False)

    fresh()
    before = seen()
    # what a killed merge of an earlier release left in its work folder inside `sales`: the
    # next merge clears it
    leftover = sales / ".d=1.dbt_merge" / "tx-old" / "new"
    leftover.mkdir(parents=True)
    shutil.copy(next((sales / "d=2").glob("*.parquet")), leftover / "x.parquet")
    run_merge(pq.read_table(source), sales / "d=1", **args)
    assert not (sales / ".d=1.dbt_merge").exists()
    after = seen()
    assert before != after
    for point, expected in NAMED_POINTS:
        fresh()
        child = start_child(source, sales / "d=1", point, args)
        child.wait(timeout=300)
        assert child.returncode == -signal.SIGKILL, f"{point}: {child.stderr.read()[-2000:]}"
        assert seen() == (before if expected == "before" else after), f"killed at {point}"
        run_merge(pq.read_table(source), sales / "d=1", **args)
        assert seen() == after, f"{point}: the next merge did not complete the merge"
        assert not list((tmp_path / ".sales.dbt_merge").glob("tx-*")), "work files left"
