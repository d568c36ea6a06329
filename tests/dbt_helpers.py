"""Drive dbt in-process (one Spark session serves every invocation) and read what it reported."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from dbt.cli.main import dbtRunner

STATS_RE = re.compile(
    r"MERGE (?P<strategy>\w+): (?P<inserted>\d+) inserted, (?P<updated>\d+) updated, "
    r"(?P<deleted>\d+) deleted, (?P<unchanged>\d+) unchanged, (?P<total>\d+) total"
)
STAT_NAMES = ("inserted", "updated", "deleted", "unchanged", "total")


@dataclass
class DbtRun:
    success: bool
    results: list  # dbt RunResult objects (node results)
    exception: BaseException | None

    def result(self, model: str):
        for r in self.results:
            if r.node.name == model:
                return r
        raise KeyError(f"no result for {model}: {[r.node.name for r in self.results]}")

    def stats(self, model: str) -> dict[str, int]:
        """The five merge statistics of a model, parsed from its adapter response message."""
        r = self.result(model)
        m = STATS_RE.search(r.adapter_response.get("_message", "") or r.message or "")
        if not m:
            raise AssertionError(f"{model}: no merge statistics in {r.adapter_response!r}")
        return {k: int(m.group(k)) for k in STAT_NAMES}

    def error(self, model: str) -> str:
        r = self.result(model)
        assert str(r.status) == "error", f"{model} did not fail: {r.status} {r.message}"
        return r.message or ""


def run_dbt(
    args: list[str],
    project_dir: str | Path,
    target: str,
    profiles_dir: str | Path | None = None,
    vars: dict | None = None,
    callbacks: list | None = None,
    write_json: bool = False,
) -> DbtRun:
    """Run one dbt command in this process and return its node results. `callbacks` receive
    every event dbt fires (e.g. to collect warnings).

    dbt's JSON artifacts (target/manifest.json, run_results.json) are written only with
    `write_json=True`, for a test that reads them: writing manifest.json twice cost about 0.38 s
    of a DuckDB invocation's 1.5 s (cProfile of tests/flow/test_trust.py), and every
    result a test asserts on comes back in this process. The merge runs the same either way."""
    import json

    cli = [*args, "--project-dir", str(project_dir), "--target", target]
    if not write_json and not any(a in ("--write-json", "--no-write-json") for a in args):
        cli.append("--no-write-json")
    cli += ["--profiles-dir", str(profiles_dir or project_dir)]
    if vars:
        cli += ["--vars", json.dumps(vars)]
    res = dbtRunner(callbacks=callbacks or []).invoke(cli)
    results = list(getattr(res.result, "results", None) or [])
    return DbtRun(success=res.success, results=results, exception=res.exception)
