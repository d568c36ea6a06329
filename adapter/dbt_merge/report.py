"""`dbt-merge report`: the merge statistics of a dbt run as a Markdown table (a job summary, a
pull-request comment).

The statistics come from run_results.json: the merge materialization stores them as each
model's adapter response (macros/stats/report_merge_stats.sql), `code` 'MERGE' or 'DRY RUN' and
`_message` the console line, e.g. `MERGE upsert: 1 inserted, 2 updated, 0 deleted, 1 unchanged,
5 total, 1 held back`. The manifest.json beside it, when there, names the strategy of a merge
model that failed or was skipped before it could report.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: the adapter response codes report_merge_stats.sql stores
MERGE_CODES = ("MERGE", "DRY RUN")
_COUNTS_RE = re.compile(
    r"^(?P<dry>DRY RUN \(nothing written\) )?MERGE (?P<strategy>\w+): "
    r"(?P<inserted>\d+) inserted, (?P<updated>\d+) updated, (?P<deleted>\d+) deleted, "
    r"(?P<unchanged>\d+) unchanged, (?P<total>\d+) total(?:, (?P<held_back>\d+) held back)?$"
)
_SKIPPED_RE = re.compile(
    r"^MERGE (?P<strategy>\w+): skipped \((?P<reason>.+)\): the target was not changed$"
)
COUNT_NAMES = ("inserted", "updated", "deleted", "unchanged", "total")
HEADERS = ("model", "status", "strategy", *COUNT_NAMES, "held back", "skipped", "DRY RUN")
#: node statuses that mean the run did not do what it should (run, test, seed, snapshot)
FAILED = ("error", "fail", "runtime error")
_MESSAGE_CHARS = 500


@dataclass(frozen=True)
class MergeRow:
    """One merge model of the run: its counts, or why it has none."""

    model: str
    status: str
    strategy: str | None
    counts: Mapping[str, int] | None = None
    held_back: int | None = None
    skipped: str | None = None
    dry_run: bool = False
    message: str | None = None


@dataclass(frozen=True)
class OtherNode:
    """A node of the run that is not a merge model (seed, test, view, table...)."""

    name: str
    resource_type: str
    status: str
    message: str | None


@dataclass(frozen=True)
class RunReport:
    command: str | None
    merges: list[MergeRow]
    others: list[OtherNode]


def parse_stats_message(message: str) -> dict | None:
    """The statistics of one merge model's message (its console line), or None if it is not one."""
    m = _COUNTS_RE.match(message or "")
    if m:
        return {
            "strategy": m["strategy"],
            "counts": {k: int(m[k]) for k in COUNT_NAMES},
            "held_back": int(m["held_back"]) if m["held_back"] is not None else None,
            "dry_run": m["dry"] is not None,
        }
    m = _SKIPPED_RE.match(message or "")
    if m:
        return {"strategy": m["strategy"], "skipped": m["reason"]}
    return None


def _node_name(unique_id: str) -> str:
    parts = unique_id.split(".")
    return ".".join(parts[2:]) if len(parts) > 2 else unique_id


def _merge_config(manifest: Mapping | None, unique_id: str) -> Mapping | None:
    """The node's config if the manifest says it is a merge model."""
    node = ((manifest or {}).get("nodes") or {}).get(unique_id) or {}
    config = node.get("config") or {}
    return config if config.get("materialized") == "merge" else None


def build_report(run_results: Mapping, manifest: Mapping | None = None) -> RunReport:
    """Sort a run's node results into merge models (with their statistics) and other nodes."""
    merges: list[MergeRow] = []
    others: list[OtherNode] = []
    for result in run_results.get("results", []):
        unique_id = result["unique_id"]
        name = _node_name(unique_id)
        status = str(result.get("status"))
        response = result.get("adapter_response") or {}
        message = result.get("message")
        stats = None
        if response.get("code") in MERGE_CODES:
            stats = parse_stats_message(response.get("_message", ""))
            if stats is None:
                raise ValueError(
                    f"{name}: adapter_response code {response['code']!r} but no merge "
                    f"statistics in its message {response.get('_message')!r}"
                )
        config = _merge_config(manifest, unique_id)
        if stats is not None:
            merges.append(MergeRow(model=name, status=status, **stats))
        elif config is not None:
            # a merge model that did not report: it failed, or dbt skipped it
            merges.append(
                MergeRow(
                    model=name,
                    status=status,
                    strategy=config.get("strategy") or "upsert",
                    message=message,
                )
            )
        else:
            others.append(OtherNode(name, unique_id.split(".")[0], status, message))
    command = ((run_results.get("args") or {}).get("which")) or None
    return RunReport(command=command, merges=merges, others=others)


def _cell(value: object) -> str:
    if value is None:
        return ""
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


_ERROR_HEAD_RE = re.compile(r"^(?P<kind>.*\bError) in \w+ \S+ \(.*\)$")


def _one_line(message: str | None) -> str:
    """A node's error on one line: the error itself, without dbt's 'X Error in model m (path)'
    heading (its kind kept) and the '> called by macro' stack."""
    lines = [line.strip() for line in (message or "").splitlines()]
    lines = [line for line in lines if line and not line.startswith(">")]
    if lines and (head := _ERROR_HEAD_RE.match(lines[0])):
        lines[0] = head["kind"] + ":"
    text = " ".join(" ".join(lines).split())
    if len(text) > _MESSAGE_CHARS:
        text = text[: _MESSAGE_CHARS - 3] + "..."
    return text.replace("`", "'")


def _merge_cells(row: MergeRow) -> list[object]:
    counts = row.counts or {}
    return [
        f"`{row.model}`",
        row.status,
        row.strategy,
        *(counts.get(k) for k in COUNT_NAMES),
        row.held_back,
        row.skipped,
        "yes" if row.dry_run else "",
    ]


def _markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    right = set(COUNT_NAMES) | {"held back"}
    lines = ["| " + " | ".join(headers) + " |"]
    lines.append("|" + "|".join("---:" if h in right else "---" for h in headers) + "|")
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def format_markdown(report: RunReport, title: str = "dbt-merge: merge statistics") -> str:
    """The report as Markdown: a table of the merge models, then what else ran and what failed."""
    lines = [f"### {title}", ""]
    dry = [r for r in report.merges if r.dry_run]
    written = [r for r in report.merges if r.counts is not None and not r.dry_run]
    if dry and not written:
        lines += ["**DRY RUN**: every merge was checked and counted; nothing was written.", ""]
    elif dry:
        lines += [f"**DRY RUN** for {_plural(len(dry), 'model')} (nothing written); "
                  f"the others wrote their changes.", ""]
    if report.merges:
        lines += _markdown_table(HEADERS, (_merge_cells(r) for r in report.merges))
    else:
        lines.append("No merge model ran.")
    failures = [r for r in report.merges if r.status in FAILED] + [
        n for n in report.others if n.status in FAILED
    ]
    if report.others:
        by_type = Counter(n.resource_type for n in report.others)
        by_status = Counter(n.status for n in report.others)
        kinds = ", ".join(_plural(c, t) for t, c in sorted(by_type.items()))
        statuses = ", ".join(f"{c} {s}" for s, c in sorted(by_status.items()))
        lines += ["", f"Other nodes: {kinds} ({statuses})."]
    if failures:
        lines += ["", f"**{_plural(len(failures), 'node')} failed:**", ""]
        for node in failures:
            name = node.model if isinstance(node, MergeRow) else node.name
            lines.append(f"- `{name}` ({node.status}): {_one_line(node.message)}")
    skipped = [r for r in report.merges if r.status == "skipped"]
    if skipped:
        lines += ["", "Skipped by dbt (an upstream node failed): "
                  + ", ".join(f"`{r.model}`" for r in skipped) + "."]
    return "\n".join(lines) + "\n"


def load_report(run_results_path: str | Path, manifest_path: str | Path | None = None) -> RunReport:
    """Read run_results.json (and manifest.json: the given one, else the one beside it, if any)."""
    path = Path(run_results_path)
    run_results = json.loads(path.read_text())
    manifest_file = Path(manifest_path) if manifest_path else path.with_name("manifest.json")
    manifest = None
    if manifest_path or manifest_file.exists():
        manifest = json.loads(manifest_file.read_text())
    return build_report(run_results, manifest)
