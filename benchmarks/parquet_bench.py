"""Benchmark merge_parquet_dataset against rewriting the whole dataset and against a DuckDB
table merge of the same data.

Data: a dataset of `--rows` rows (default 10M; --quick 1M) in 20 files of sorted keys, five
columns (id, customer, amount, category, updated_at), and the increments below (half updates,
half new keys), each a Parquet file:

- `small`: 10k rows (--quick 1k) whose updates fall in 2 of the 20 files;
- `large`: 1M rows (--quick 100k) whose updates are spread over every file.

Methods, each an upsert of the increment, with the same final rows:

- `ours`: merge_parquet_dataset (checks, statistics, stats-pruned files, atomic swap);
- `whole rewrite`: read every file, merge, write every file anew (no checks, no statistics;
  out of core in DuckDB: `copy (target anti join increment union all increment) to ...`,
  then the new files replace the old ones) -- the approach that reads and rewrites it all;
- `duckdb table`: the same rows in a DuckDB table (`.duckdb` file), `MERGE INTO ... WHEN
  MATCHED UPDATE WHEN NOT MATCHED INSERT` in a transaction, then CHECKPOINT (so the change is
  on disk, as the files are).

Each measurement runs in a fresh process on a fresh copy of the data (hard links for the
dataset, a file copy for the database), after an untimed warm-up of the same method on tiny
data (imports, DuckDB's first connection, compiling the macros), timed by wall clock around
the merge only; peak memory is that process's peak resident set size during the merge
(Linux VmHWM, reset just before).

    python -m benchmarks.parquet_bench            # full sizes, 3 repetitions
    python -m benchmarks.parquet_bench --quick    # 1/10 sizes, one repetition
    python -m benchmarks.parquet_bench --base 68c0998 --reps 5   # paired, before/after

`--base REV` (a git revision, or a folder holding the package) times `ours` alone, this
checkout's package against the base's on the same data, alternating pair by pair (base first,
then this checkout first, ...), and reports each pair's ratio and the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .merge_bench import machine

REPO = Path(__file__).resolve().parents[1]
# Measure this checkout's dbt_merge (the child processes get the same PYTHONPATH).
sys.path.insert(0, str(REPO / "adapter"))
FILES = 20
METHODS = ("ours", "whole_rewrite", "duckdb_table")

COLUMNS_SQL = (
    "select i as id, 'name_' || cast(i % 100000 as varchar) as customer, i * 1.5 as amount,"
    " cast(i % 50 as integer) as category,"
    " timestamp '2024-01-01 00:00:00' + to_seconds(i % 86400) as updated_at"
)


def prepare(work: Path, rows: int, increments: dict[str, int]) -> None:
    """The pristine dataset and database, and one Parquet file per increment."""
    import duckdb
    from dbt_merge.parquet import merge_with_report as run_merge

    con = duckdb.connect()
    data = con.sql(f"{COLUMNS_SQL} from (select range as i from range({rows}))")
    run_merge(data, work / "pristine", "id", rows_per_file=rows // FILES, connection=con)
    per_file = rows // FILES
    for name, size in increments.items():
        half = size // 2
        if name == "small":
            # updates: keys of two files (the 4th and the 13th), spread inside each
            step = max(1, per_file // (half // 2))
            updated = (
                f"select {3 * per_file} + range * {step} as i from range({half // 2})"
                f" union all select {12 * per_file} + range * {step} from range({half - half // 2})"
            )
        else:
            step = max(1, rows // half)
            updated = f"select range * {step} as i from range({half})"
        con.execute(
            f"copy (select id, customer, amount + 1 as amount, category,"
            f" updated_at + interval 1 day as updated_at from ({COLUMNS_SQL} from ({updated}))"
            f" union all {COLUMNS_SQL} from (select {rows} + range as i from range({size - half})))"
            f" to '{work / f'inc_{name}.parquet'}' (format parquet)"
        )
    db = duckdb.connect(str(work / "pristine.duckdb"))
    db.execute(f"create table target as select * from read_parquet('{work}/pristine/*.parquet')")
    db.execute("checkpoint")
    db.close()
    con.close()


CHILD = r"""
import json, os, sys, time
from pathlib import Path
method, work, increment = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
source = str(work / f"inc_{increment}.parquet")
import duckdb
try:
    from dbt_merge.parquet import merge_with_report as run_merge
except ImportError:  # a package before 0.2.0 (--base): the same function, its old name
    from dbt_merge.parquet import run_merge
_connect = duckdb.connect


def quiet_connect(*args, **kwargs):
    con = _connect(*args, **kwargs)
    con.execute("set enable_progress_bar = false")  # its bar would go to stdout
    return con


duckdb.connect = quiet_connect

def peak_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

def fingerprint(relation):
    con = duckdb.connect()
    got = con.execute(
        f"select count(*), sum(hash(id, customer, amount, category, updated_at)) from {relation}"
    ).fetchone()
    con.close()
    return list(map(int, got))

# Warm up, untimed: imports and first-use costs (DuckDB's first connection, Jinja compiling
# the macros) are paid once per process, not per merge.
import pyarrow as pa
warm = work / "warm"
run_merge(pa.table({"id": [1, 2], "v": ["a", "b"]}), warm / "ds", "id", durable=False)
run_merge(pa.table({"id": [2, 3], "v": ["c", "d"]}), warm / "ds", "id", durable=False)
warm_db = duckdb.connect(str(warm / "w.duckdb"), )
warm_db.execute("create table t as select 1 as x")
warm_db.close()
Path("/proc/self/clear_refs").write_text("5")
started = time.monotonic()
files_rewritten = None
if method == "ours":
    report = run_merge(source, work / "ds", "id", rows_per_file=int(sys.argv[4]))
    files_rewritten = len(report.files_removed)
    stats = report.stats
elif method == "whole_rewrite":
    con = duckdb.connect(config={"temp_directory": str(work / "spill")})
    ds = work / "ds"
    old = sorted(ds.glob("*.parquet"))
    con.execute(
        f"copy (select * from read_parquet('{ds}/*.parquet') as t"
        f" anti join read_parquet('{source}') as s using (id)"
        f" union all select * from read_parquet('{source}') order by id)"
        f" to '{work / 'rewritten'}' (format parquet, compression zstd,"
        f" row_group_size 122880, row_groups_per_file {max(1, int(sys.argv[4]) // 122880)},"
        f" filename_pattern 'part-{{i}}')"
    )
    con.close()
    for f in old:
        f.unlink()
    for f in (work / "rewritten").iterdir():
        os.rename(f, ds / f.name)
    files_rewritten = len(old)
    stats = None
else:
    con = duckdb.connect(str(work / "db.duckdb"), )
    con.execute("begin")
    con.execute(
        f"merge into target using read_parquet('{source}') as s on target.id = s.id"
        " when matched then update set customer = s.customer, amount = s.amount,"
        " category = s.category, updated_at = s.updated_at"
        " when not matched then insert values (s.id, s.customer, s.amount, s.category,"
        " s.updated_at)"
    )
    con.execute("commit")
    con.execute("checkpoint")
    con.close()
    stats = None
seconds = time.monotonic() - started
peak = peak_mb()
if method == "duckdb_table":
    con = duckdb.connect(str(work / "db.duckdb"), read_only=True, )
    fp = list(map(int, con.execute(
        "select count(*), sum(hash(id, customer, amount, category, updated_at)) from target"
    ).fetchone()))
    con.close()
else:
    fp = fingerprint(f"read_parquet('{work / 'ds'}/**/*.parquet')")
result = {"seconds": seconds, "peak_mb": peak, "files_rewritten": files_rewritten,
          "stats": stats, "fingerprint": fp}
print("RESULT " + json.dumps(result))
"""


def run_one(work: Path, method: str, increment: str, rows_per_file: int,
            package: Path = REPO) -> dict:
    for path in (
        work / "ds",
        work / ".ds.dbt_merge",
        work / "rewritten",
        work / "spill",
        work / "warm",
    ):
        shutil.rmtree(path, ignore_errors=True)
    (work / "db.duckdb").unlink(missing_ok=True)
    if method == "duckdb_table":
        shutil.copyfile(work / "pristine.duckdb", work / "db.duckdb")
    else:
        # hard links: no method changes a file in place (ours swaps, the rewrite deletes)
        shutil.copytree(work / "pristine", work / "ds", copy_function=os.link)
    env = {**os.environ, "PYTHONPATH": str(package / "adapter")}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, method, str(work), increment, str(rows_per_file)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{method} {increment} failed:\n{out.stderr[-3000:]}")
    line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT ") :])


def markdown(meta: dict, results: list[dict]) -> str:
    lines = [
        f"# Parquet dataset merge: {meta['rows']:,} rows in {FILES} files",
        "",
        f"{meta['date']}; {meta['machine']}; load average at start {meta['load'][0]:.1f}, "
        f"end {meta['load'][1]:.1f}; median of {meta['reps']} run(s); duckdb {meta['duckdb']}.",
        "",
        "| increment | method | seconds | vs whole rewrite | peak MB | files rewritten |"
        " statistics |",
        "|---|---|---|---|---|---|---|",
    ]
    by = {(r["increment"], r["method"]): r for r in results}
    for increment, label in meta["increments"].items():
        rewrite = by.get((increment, "whole_rewrite"))
        for method in METHODS:
            r = by.get((increment, method))
            if not r:
                continue
            ratio = (
                f"{r['median'] / rewrite['median']:.2f}x"
                if rewrite and method != "whole_rewrite"
                else "1.00x"
                if method == "whole_rewrite"
                else "-"
            )
            stats = r.get("stats") or {}
            text = ", ".join(f"{v} {k}" for k, v in stats.items()) if stats else "-"
            files = "-" if r["files_rewritten"] is None else f"{r['files_rewritten']} of {FILES}"
            lines.append(
                f"| {label} | {method} | {r['median']:.2f} | {ratio} | {max(r['peak_mb']):.0f}"
                f" | {files} | {text} |"
            )
    small = (by.get(("small", "ours")), by.get(("small", "whole_rewrite")))
    if all(small):
        ratio = small[0]["median"] / small[1]["median"]
        verdict = "met" if ratio <= 0.2 else "NOT met"
        lines += [
            "",
            f"Goal (a small increment touching 2 of {FILES} files costs at most 0.2x the whole "
            f"rewrite): {ratio:.2f}x, {verdict}.",
        ]
    same = {tuple(r["fingerprint"]) for r in results if r["increment"] == "small"}
    same_large = {tuple(r["fingerprint"]) for r in results if r["increment"] == "large"}
    lines.append(
        "Same final rows for every method: "
        + ("yes" if len(same) <= 1 and len(same_large) <= 1 else "NO")
        + "."
    )
    return "\n".join(lines) + "\n"


def paired(work: Path, base: Path, name: str, increments: dict[str, int], reps: int, rows: int,
           log) -> str:
    """`ours` of this checkout against `ours` of the package at `base`, alternating: a table
    of the medians and of each pair's ratio (this checkout / base)."""
    lines = [
        f"# Parquet dataset merge, paired: this checkout against {name}",
        "",
        f"{rows:,} rows in {FILES} files; {reps} pairs, alternating which runs first; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load "
        f"{os.getloadavg()[0]:.2f}.",
        "",
        "| increment | base s (median) | this s (median) | this / base (median of pairs) "
        "| pairs | same rows and counts |",
        "|---|---|---|---|---|---|",
    ]
    for increment, size in increments.items():
        runs: dict[str, list[dict]] = {"base": [], "this": []}
        for rep in range(reps):
            order = ("base", "this") if rep % 2 == 0 else ("this", "base")
            for which in order:
                package = base if which == "base" else REPO
                runs[which].append(run_one(work, "ours", increment, rows // FILES, package))
                log(f"{increment} {which}: {runs[which][-1]['seconds']:.2f} s")
        pairs = zip(runs["base"], runs["this"], strict=True)
        ratios = [t["seconds"] / b["seconds"] for b, t in pairs]
        same = {
            (tuple(r["fingerprint"]), json.dumps(
                {k: v for k, v in (r["stats"] or {}).items() if k in COUNTS}, sort_keys=True))
            for r in runs["base"] + runs["this"]
        }
        lines.append(
            f"| {size:,} rows | {statistics.median(r['seconds'] for r in runs['base']):.3f} "
            f"| {statistics.median(r['seconds'] for r in runs['this']):.3f} "
            f"| {statistics.median(ratios):.2f}x "
            f"| {', '.join(f'{x:.2f}' for x in ratios)} | {'yes' if len(same) == 1 else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


#: the counts both versions report (the base's dict and this checkout's MergeResult alike)
COUNTS = ("inserted", "updated", "deleted", "unchanged", "total")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1/10 of the sizes, one repetition")
    parser.add_argument("--reps", type=int, help="repetitions (default 3, 1 with --quick)")
    parser.add_argument("--rows", type=int, help="dataset rows (default 10M, 1M with --quick)")
    parser.add_argument(
        "--out",
        type=Path,
        help="folder for parquet_results.md/.json (default benchmarks/results/parquet, "
        "or printed only with --quick)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the data folder")
    parser.add_argument("--base", help="time `ours` paired against this git revision or folder")
    args, _ = parser.parse_known_args(argv)
    import duckdb

    rows = args.rows or (1_000_000 if args.quick else 10_000_000)
    scale = rows / 10_000_000
    increments = {"small": max(1000, round(10_000 * scale)), "large": round(1_000_000 * scale)}
    reps = args.reps or (1 if args.quick else 3)
    labels = {
        k: f"{v:,} rows" + (" (2 files)" if k == "small" else " (all files)")
        for k, v in increments.items()
    }
    started = time.time()
    load = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="parquet_bench_"))

    def log(msg: str) -> None:
        print(f"{time.time() - started:7.1f}s {msg}", file=sys.stderr, flush=True)

    results = []
    try:
        log(f"preparing {rows:,} rows in {work}")
        prepare(work, rows, increments)
        if args.base:
            from .compare import export

            base = export(args.base, work / "base")
            text = paired(work, base, args.base, increments, reps, rows, log)
            print(text)
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / "parquet_paired.md").write_text(text)
            return 0
        for increment in increments:
            for method in METHODS:
                runs = []
                for _ in range(reps):
                    runs.append(run_one(work, method, increment, rows // FILES))
                    log(f"{increment} {method}: {runs[-1]['seconds']:.2f} s")
                results.append(
                    {
                        "increment": increment,
                        "method": method,
                        "seconds": [r["seconds"] for r in runs],
                        "median": statistics.median(r["seconds"] for r in runs),
                        "peak_mb": [r["peak_mb"] for r in runs],
                        "files_rewritten": runs[0]["files_rewritten"],
                        "stats": runs[0]["stats"],
                        "fingerprint": runs[0]["fingerprint"],
                    }
                )
    finally:
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "load": [load[0], os.getloadavg()[0]],
        "reps": reps,
        "rows": rows,
        "increments": labels,
        "duckdb": duckdb.__version__,
    }
    text = markdown(meta, results)
    print(text)
    out = args.out or (None if args.quick else REPO / "benchmarks" / "results" / "parquet")
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "parquet_results.md").write_text(text)
        (out / "parquet_results.json").write_text(
            json.dumps({"meta": meta, "results": results}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
