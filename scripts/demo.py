"""The demo: the integration project on the embedded DuckDB, first load then the increment,
printing each merge model's statistics from dbt's run_results.json."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from dbt.cli.main import dbtRunner

PROJECT = Path(__file__).resolve().parents[1] / "integration_tests"
STATS = re.compile(
    r"MERGE (\w+): (\d+) inserted, (\d+) updated, (\d+) deleted, (\d+) unchanged, (\d+) total"
)
COLUMNS = ("model", "strategy", "inserted", "updated", "deleted", "unchanged", "total")


def dbt(*args: str) -> None:
    cli = [*args, "--project-dir", str(PROJECT), "--profiles-dir", str(PROJECT)]
    cli += ["--target", "duckdb"]
    if not dbtRunner().invoke(cli).success:
        sys.exit(f"demo: `dbt {' '.join(args)}` failed")


def print_stats(title: str) -> None:
    results = json.loads((PROJECT / "target" / "run_results.json").read_text())["results"]
    print(f"\n{title}")
    row = "{:<24} {:<12} {:>8} {:>8} {:>8} {:>9} {:>6}"
    print(row.format(*COLUMNS))
    for r in sorted(results, key=lambda r: r["unique_id"]):
        m = STATS.search(r["adapter_response"].get("_message", ""))
        if m:
            name = r["unique_id"].split(".")[-1]
            print(row.format(name, *m.groups()))


def main() -> None:
    dbt("deps", "--quiet")
    dbt("seed", "--full-refresh", "--quiet")
    dbt("run", "--full-refresh", "--exclude", "tag:error_case", "--vars", "phase: initial")
    print_stats("First run (initial state): every row inserted")
    dbt("run", "--exclude", "tag:error_case", "--vars", "phase: increment")
    print_stats("Second run (the increment)")
    dbt("test", "--exclude", "tag:error_case", "tag:expect_test_failure",
        "--vars", "phase: increment", "--quiet")
    print("\ndbt test: every merged table equals its *_expected seed and its keys are unique.")


if __name__ == "__main__":
    main()
