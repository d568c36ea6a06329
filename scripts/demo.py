"""The demo: the integration project on the embedded DuckDB, first load then the increment,
printing each merge model's statistics from dbt's run_results.json: the five counts, the rows
held back by a merge_update_condition, and whether the run was a dry run (nothing written)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from dbt.cli.main import dbtRunner

PROJECT = Path(__file__).resolve().parents[1] / "integration_tests"
#: the statistics of a merge model's console line (macros/stats/report_merge_stats.sql)
STATS = re.compile(
    r"MERGE (\w+): (\d+) inserted, (\d+) updated, (\d+) deleted, (\d+) unchanged, (\d+) total"
    r"(?:, (\d+) held back)?"
)
COLUMNS = ("model", "strategy", "inserted", "updated", "deleted", "unchanged", "total",
           "held back", "")
ROW = "{:<24} {:<12} {:>8} {:>8} {:>8} {:>9} {:>6} {:>9}  {}"


def dbt(*args: str) -> None:
    cli = [*args, "--project-dir", str(PROJECT), "--profiles-dir", str(PROJECT)]
    cli += ["--target", "duckdb"]
    if not dbtRunner().invoke(cli).success:
        sys.exit(f"demo: `dbt {' '.join(args)}` failed")


def stats_rows(results: list[dict]) -> list[tuple[str, ...]]:
    """One row per merge model of a run_results.json: its name, strategy, counts, held back
    ('-' without a merge_update_condition) and 'DRY RUN (nothing written)' for a dry run."""
    rows = []
    for r in sorted(results, key=lambda r: r["unique_id"]):
        response = r.get("adapter_response") or {}
        m = STATS.search(response.get("_message", ""))
        if m:
            *counts, held_back = m.groups()
            dry_run = "DRY RUN (nothing written)" if response.get("code") == "DRY RUN" else ""
            name = r["unique_id"].split(".")[-1]
            rows.append((name, *counts, held_back or "-", dry_run))
    return rows


def print_stats(title: str) -> None:
    results = json.loads((PROJECT / "target" / "run_results.json").read_text())["results"]
    print(f"\n{title}")
    print(ROW.format(*COLUMNS).rstrip())
    for row in stats_rows(results):
        print(ROW.format(*row).rstrip())


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
