"""`dbt-merge report`: the merge statistics of a dbt run as a Markdown table (a job summary, a
pull-request comment).

The statistics come from run_results.json: the merge materialization stores them as each
model's adapter response (macros/stats/report_merge_stats.sql), `code` 'MERGE' or 'DRY RUN' and
`_message` the console line, e.g. `MERGE upsert: 1 inserted, 2 updated, 0 deleted, 1 unchanged,
5 total, 1 held back` (a history merge adds `, 9 versions`: the table's rows; its total is the
current versions). The manifest.json beside it, when there, names the strategy of a merge
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
    r"(?P<unchanged>\d+) unchanged, (?P<total>\d+) total(?:, (?P<held_back>\d+) held back)?"
    r"(?:, (?P<versions>\d+) versions)?$"
)
_SKIPPED_RE = re.compile(
    r"^MERGE (?P<strategy>\w+): skipped \((?P<reason>.+)\): the target was not changed$"
)
COUNT_NAMES = ("inserted", "updated", "deleted", "unchanged", "total")
HEADERS = ("model", "status", "strategy", *COUNT_NAMES, "held back", "skipped", "DRY RUN")
#: node statuses that mean the run did not do what it should (run, test, seed, snapshot)
FAILED = ("error", "fail", "runtime error")
_MESSAGE_CHARS = 500


class ReportError(ValueError):
    """A file that is not what the report reads, named with what it is instead."""


#: the schema version of the artifacts dbt 1.8 to 1.11 write, the only ones the report reads
SCHEMA_VERSIONS = {"run-results": 6, "manifest": 12}
_SCHEMA_RE = re.compile(
    r"^https://schemas\.getdbt\.com/dbt/(?P<kind>[\w-]+)/v(?P<version>\d+)\.json$"
)
#: the file name of each kind of dbt artifact, as dbt names it in its target folder
_ARTIFACT_FILES = {"run-results": "run_results.json", "manifest": "manifest.json",
                   "catalog": "catalog.json", "sources": "sources.json"}
#: the dbt commands whose run_results.json the report reads: they run models (`dbt retry`
#: writes the name of the command it retried)
MERGE_COMMANDS = ("run", "build", "retry")
#: how a user types the commands whose `which` differs from what they type
_COMMAND_NAMES = {"generate": "docs generate", "serve": "docs serve", "list": "ls",
                  "freshness": "source freshness"}


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
    versions: int | None = None


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
            **({"versions": int(m["versions"])} if m["versions"] is not None else {}),
        }
    m = _SKIPPED_RE.match(message or "")
    if m:
        return {"strategy": m["strategy"], "skipped": m["reason"]}
    return None


def _node_name(unique_id: str) -> str:
    parts = unique_id.split(".")
    return ".".join(parts[2:]) if len(parts) > 2 else unique_id


def _kind(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def _is(value: object, kind: type | tuple[type, ...], name: str, where: str) -> bool:
    if not isinstance(value, kind):
        expected = _kind(kind() if isinstance(kind, type) else kind[0]())
        raise ReportError(f"{name}: {where} is not {'an' if expected[0] in 'aeiou' else 'a'} "
                          f"{expected} (it is {'an' if _kind(value)[0] in 'aeiou' else 'a'} "
                          f"{_kind(value)}), so it is not a file dbt wrote")
    return True


def _field(parent: Mapping, key: str, kind: type | tuple[type, ...], name: str, where: str,
           required: bool = False):
    """parent[key], checked to be of `kind` (a missing key is None, or an error if required)."""
    path = f"{where}.{key}" if where else key
    if key not in parent:
        if required:
            raise ReportError(f"{name}: {path} is missing, so it is not a file dbt wrote")
        return None
    value = parent[key]
    _is(value, kind, name, path)
    return value


def read_artifact(path: str | Path, kind: str) -> dict:
    """The JSON of a dbt artifact of `kind` (run-results, manifest), refused naming the file and
    what it is instead unless it is one of the schema version SCHEMA_VERSIONS names."""
    path = Path(path)
    expected = _ARTIFACT_FILES[kind]
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ReportError(f"{path} is not text (UTF-8), so it is not dbt's {expected}") from None
    except OSError as error:
        raise ReportError(f"cannot read {path}: {error.strerror or error}") from None
    if not text.strip():
        raise ReportError(f"{path} is empty, so it is not dbt's {expected} (was dbt stopped "
                          "while writing it?)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ReportError(f"{path} is not JSON ({error.msg} at line {error.lineno} column "
                          f"{error.colno}), so it is not dbt's {expected}") from None
    except RecursionError:
        raise ReportError(f"{path} is not JSON dbt wrote (it nests too deeply), so it is not "
                          f"dbt's {expected}") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path} holds a JSON {_kind(data)}, not dbt's {expected}")
    metadata = data.get("metadata")
    version = metadata.get("dbt_schema_version") if isinstance(metadata, dict) else None
    found = _SCHEMA_RE.match(version) if isinstance(version, str) else None
    if found is None:
        raise ReportError(f"{path} is not a dbt artifact (no metadata.dbt_schema_version), so it "
                          f"is not dbt's {expected}")
    schema = f"{found['kind']}/v{found['version']}"
    if found["kind"] != kind:
        name = _ARTIFACT_FILES.get(found["kind"], f"{found['kind']} artifact")
        if kind == "run-results":
            wanted = (f"the {expected} of a run: pass the run_results.json that `dbt run` or "
                      f"`dbt build` wrote ({path.with_name(expected)})")
        else:
            wanted = f"a {expected}: pass the {expected} of the run with --manifest"
        raise ReportError(f"{path} is dbt's {name} (schema {schema}), not {wanted}.")
    if int(found["version"]) != SCHEMA_VERSIONS[kind]:
        raise ReportError(
            f"{path} is {expected} of schema version v{found['version']}; this dbt-merge reads "
            f"v{SCHEMA_VERSIONS[kind]}, which dbt 1.8 to 1.11 write. Report on the files of a "
            "dbt version the package supports.")
    return data


def check_run_results(run_results: Mapping, name: str = "run_results.json") -> None:
    """Refuse run results that are not those of a command that runs models, or whose shape is
    not the one dbt writes, naming the file (`name`) and what is wrong."""
    _is(run_results, dict, name, "the file")
    args = _field(run_results, "args", dict, name, "") or {}
    which = args.get("which")
    if not isinstance(which, str) or not which:
        raise ReportError(f"{name} does not say which dbt command wrote it (args.which), so it "
                          "is not the run_results.json of a dbt 1.8 to 1.11 run")
    if which not in MERGE_COMMANDS:
        command = _COMMAND_NAMES.get(which, which)
        raise ReportError(
            f"{name} holds the results of `dbt {command}`, which runs no model, so it has no "
            "merge statistics. Report on the run_results.json of `dbt run` or `dbt build` (dbt "
            "replaces it at each command: run `dbt-merge report` right after the run, or copy "
            "the file aside).")
    results = _field(run_results, "results", list, name, "", required=True)
    for i, result in enumerate(results):
        where = f"results[{i}]"
        _is(result, dict, name, where)
        _field(result, "unique_id", str, name, where, required=True)
        _field(result, "status", str, name, where, required=True)
        _field(result, "message", (str, type(None)), name, where)
        response = _field(result, "adapter_response", (dict, type(None)), name, where) or {}
        _field(response, "code", (str, type(None)), name, f"{where}.adapter_response")
        _field(response, "_message", (str, type(None)), name, f"{where}.adapter_response")


def check_manifest(manifest: Mapping, name: str = "manifest.json") -> None:
    """Refuse a manifest whose nodes are not the shape dbt writes."""
    _is(manifest, dict, name, "the file")
    _field(manifest, "nodes", dict, name, "", required=True)


def _merge_config(manifest: Mapping | None, unique_id: str, name: str) -> Mapping | None:
    """The node's config if the manifest says it is a merge model."""
    node = manifest["nodes"].get(unique_id) if manifest is not None else None
    if node is None:
        return None
    where = f"nodes[{unique_id!r}]"
    _is(node, dict, name, where)
    config = _field(node, "config", (dict, type(None)), name, where) or {}
    return config if config.get("materialized") == "merge" else None


def build_report(run_results: Mapping, manifest: Mapping | None = None, *,
                 name: str = "run_results.json", manifest_name: str = "manifest.json",
                 ) -> RunReport:
    """Sort a run's node results into merge models (with their statistics) and other nodes.
    Raises ReportError, naming `name` (or `manifest_name`), for results that are not those of a
    run (check_run_results)."""
    check_run_results(run_results, name)
    if manifest is not None:
        check_manifest(manifest, manifest_name)
    merges: list[MergeRow] = []
    others: list[OtherNode] = []
    for result in run_results["results"]:
        unique_id = result["unique_id"]
        model = _node_name(unique_id)
        status = result["status"]
        response = result.get("adapter_response") or {}
        message = result.get("message")
        stats = None
        if response.get("code") in MERGE_CODES:
            stats = parse_stats_message(response.get("_message") or "")
            if stats is None:
                raise ReportError(
                    f"{name}: model {_shown(model)}: adapter_response code "
                    f"{response['code']!r} but no merge statistics in its message "
                    f"{response.get('_message')!r} (written by "
                    "another version of the dbt_merge package?)"
                )
        config = _merge_config(manifest, unique_id, manifest_name)
        if stats is not None:
            merges.append(MergeRow(model=model, status=status, **stats))
        elif config is not None:
            # a merge model that did not report: it failed, or dbt skipped it
            strategy = config.get("strategy")
            merges.append(
                MergeRow(
                    model=model,
                    status=status,
                    strategy=strategy if isinstance(strategy, str) else "upsert",
                    message=message,
                )
            )
        else:
            others.append(OtherNode(model, unique_id.split(".")[0], status, message))
    return RunReport(command=run_results["args"]["which"], merges=merges, others=others)


#: a value shown as plain text in the Markdown: words, one space, `_` or `-` between them (no
#: emphasis, link, HTML, mention or emoji can start in it), or a flag such as --empty
_PLAIN_RE = re.compile(r"[A-Za-z0-9]+(?:[ _-][A-Za-z0-9]+)*|--[a-z]+(?:-[a-z]+)*")


def _shown(text: str) -> str:
    """A name or message as the report shows it: each unprintable character (a newline, a tab,
    a control or bidi character) as its escape; a blank one quoted."""
    if not text.strip():
        return repr(text)
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _code(text: str, in_table: bool = False) -> str:
    """`text` as one Markdown code span, whatever it holds: nothing inside is Markdown, HTML,
    a mention or an emoji. The fence is longer than any run of backticks in it, and a space
    pads a text that starts or ends with a backtick (CommonMark strips one space each side).
    In a table, a pipe is escaped: GFM splits the row before reading the span."""
    text = _shown(text)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    if text[0] == "`" or text[-1] == "`" or (text[0] == " " and text[-1] == " "):
        text = f" {text} "
    if in_table:
        text = text.replace("|", "\\|")
    return fence + text + fence


def _text(value: object, in_table: bool = False) -> str:
    """A value of the file (a status, a strategy, a node's kind) as plain text when it is a
    plain word or flag, else as code."""
    if value is None:
        return ""
    text = str(value)
    return text if _PLAIN_RE.fullmatch(text) else _code(text, in_table)


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
    return text


def _merge_cells(row: MergeRow, versions: bool = False) -> list[str]:
    counts = row.counts or {}
    return [
        _code(row.model, in_table=True),
        *(_text(v, in_table=True) for v in (row.status, row.strategy)),
        *(_text(counts.get(k)) for k in COUNT_NAMES),
        _text(row.held_back),
        *([_text(row.versions)] if versions else []),
        _text(row.skipped, in_table=True),
        "yes" if row.dry_run else "",
    ]


def _markdown_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    right = set(COUNT_NAMES) | {"held back", "versions"}
    lines = ["| " + " | ".join(headers) + " |"]
    lines.append("|" + "|".join("---:" if h in right else "---" for h in headers) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def format_markdown(report: RunReport, title: str = "dbt-merge: merge statistics") -> str:
    """The report as Markdown: a table of the merge models, then what else ran and what failed.
    Names, statuses and messages from the run are code (or plain words), so the Markdown renders
    as the table it is whatever they hold."""
    lines = [f"### {title}", ""]
    dry = [r for r in report.merges if r.dry_run]
    written = [r for r in report.merges if r.counts is not None and not r.dry_run]
    if dry and not written:
        lines += ["**DRY RUN**: every merge was checked and counted; nothing was written.", ""]
    elif dry:
        lines += [f"**DRY RUN** for {_plural(len(dry), 'model')} (nothing written); "
                  f"the others wrote their changes.", ""]
    if report.merges:
        # a history merge's versions (the table's rows), in a column of their own when one ran
        versions = any(r.versions is not None for r in report.merges)
        headers = HEADERS if not versions else (*HEADERS[:-2], "versions", *HEADERS[-2:])
        lines += _markdown_table(headers, (_merge_cells(r, versions) for r in report.merges))
    else:
        lines.append("No merge model ran.")
    failures = [r for r in report.merges if r.status in FAILED] + [
        n for n in report.others if n.status in FAILED
    ]
    if report.others:
        by_type = Counter(n.resource_type for n in report.others)
        by_status = Counter(n.status for n in report.others)
        kinds = ", ".join(_plural(c, _text(t)) for t, c in sorted(by_type.items()))
        statuses = ", ".join(f"{c} {_text(s)}" for s, c in sorted(by_status.items()))
        lines += ["", f"Other nodes: {kinds} ({statuses})."]
    if failures:
        lines += ["", f"**{_plural(len(failures), 'node')} failed:**", ""]
        for node in failures:
            name = node.model if isinstance(node, MergeRow) else node.name
            message = _one_line(node.message)
            lines.append(f"- {_code(name)} ({_text(node.status)})"
                         + (f": {_code(message)}" if message else ""))
    skipped = [r for r in report.merges if r.status == "skipped"]
    if skipped:
        lines += ["", "Skipped by dbt (an upstream node failed): "
                  + ", ".join(_code(r.model) for r in skipped) + "."]
    return "\n".join(lines) + "\n"


def load_report(run_results_path: str | Path, manifest_path: str | Path | None = None) -> RunReport:
    """Read run_results.json (and manifest.json: the given one, else the one beside it, if any).
    Raises ReportError, naming the file, for a file that is not the results of a run of a dbt
    version the package supports (or not its manifest)."""
    path = Path(run_results_path)
    run_results = read_artifact(path, "run-results")
    manifest_file = Path(manifest_path) if manifest_path else path.with_name("manifest.json")
    manifest = None
    if manifest_path or manifest_file.exists():
        manifest = read_artifact(manifest_file, "manifest")
    return build_report(run_results, manifest, name=str(path), manifest_name=str(manifest_file))
