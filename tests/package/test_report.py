"""`dbt-merge report` on run results as dbt writes them (no database): the messages
report_merge_stats.sql writes, failed and skipped merge models, Markdown that renders right
whatever a name or message holds, and every file that is not the results of a run refused with
one line naming it (through `main` and through the installed command)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from dbt_merge.cli import main
from dbt_merge.report import (
    HEADERS,
    ReportError,
    build_report,
    format_markdown,
    load_report,
    parse_stats_message,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = "https://schemas.getdbt.com/dbt/{}/v{}.json"

MANIFEST = {
    "metadata": {"dbt_schema_version": SCHEMAS.format("manifest", 12)},
    "nodes": {
        "model.p.m_fail": {"config": {"materialized": "merge", "strategy": "full_merge"}},
        "model.p.m_skip": {"config": {"materialized": "merge"}},
        "model.p.plain": {"config": {"materialized": "table"}},
    },
}


def run_results(results: list, which: str = "run", version: int = 6, **args) -> dict:
    """A run_results.json as dbt 1.8 to 1.11 write it."""
    return {
        "metadata": {"dbt_schema_version": SCHEMAS.format("run-results", version),
                     "dbt_version": "1.11.0", "invocation_id": "x"},
        "results": results,
        "elapsed_time": 1.0,
        "args": {"which": which, **args},
    }


def result(name: str, status: str, message: str | None = None, code: str | None = None,
           kind: str = "model") -> dict:
    response = {"_message": message, "code": code, "rows_affected": 0} if code else {}
    return {"unique_id": f"{kind}.p.{name}", "status": status, "message": message,
            "adapter_response": response}


def merged(name: str, strategy: str = "upsert") -> dict:
    return result(name, "success", f"MERGE {strategy}: 1 inserted, 2 updated, 0 deleted, "
                  "1 unchanged, 4 total", "MERGE")


# --- Markdown as GitHub reads it (GFM tables and code spans) -------------------------------------

_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def gfm_cells(line: str) -> list[str]:
    """The cells of a GFM table row: split on each pipe that no backslash escapes (GFM splits
    the row before inline parsing, also inside code spans), then `\\|` read as `|`."""
    assert line.startswith("|") and line.endswith("|") and not line.endswith("\\|"), line
    return [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(line[1:-1])]


def code_span(text: str) -> str | None:
    """The content of `text` if it is exactly one CommonMark code span, else None."""
    fence = re.match(r"`+", text)
    if not fence or not text.endswith(fence.group()) or len(text) < 2 * len(fence.group()):
        return None
    n = len(fence.group())
    inner = text[n:-n]
    # the span closes at the first run of exactly n backticks: there must be none inside
    if any(len(run) == n for run in re.findall(r"`+", inner)):
        return None
    if inner.startswith(" ") and inner.endswith(" ") and inner.strip(" "):
        inner = inner[1:-1]
    return inner


def shown(text: str) -> str:
    """What a report shows for a name or message: itself, each unprintable character as its
    escape (a newline as \\n), a blank one quoted."""
    if not text.strip():
        return repr(text)
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def table(text: str) -> list[list[str]]:
    lines = text.splitlines()
    start = lines.index("| " + " | ".join(HEADERS) + " |")
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(gfm_cells(line))
    return rows


# --- the statistics and the table ----------------------------------------------------------------


def test_parse_the_messages_the_macro_writes():
    assert parse_stats_message(
        "DRY RUN (nothing written) MERGE upsert: 1 inserted, 2 updated, 0 deleted, "
        "1 unchanged, 5 total, 1 held back") == {
        "strategy": "upsert", "dry_run": True, "held_back": 1,
        "counts": {"inserted": 1, "updated": 2, "deleted": 0, "unchanged": 1, "total": 5}}
    assert parse_stats_message(
        "MERGE full_merge: skipped (--empty): the target was not changed") == {
        "strategy": "full_merge", "skipped": "--empty"}
    assert parse_stats_message("OK") is None


def test_failed_skipped_and_other_nodes():
    data = run_results([
        result("m_ok", "success", "MERGE insert: 3 inserted, 0 updated, 0 deleted, 0 unchanged, "
               "3 total", "MERGE"),
        result("m_empty", "success", "MERGE upsert: skipped (--empty): the target was not "
               "changed", "MERGE"),
        result("m_fail", "error", "Compilation Error in model m_fail (models/m_fail.sql)\n"
               "  dbt_merge: model 'm_fail': a | b `c`\n  \n"
               "  > in macro raise_merge_error (x.sql)"),
        result("m_skip", "skipped"),
        result("plain", "success", "OK", "OK"),
        result("not_null_plain_id", "fail", "Got 2 results", kind="test"),
    ], which="build")
    report = build_report(data, MANIFEST)
    assert [(r.model, r.status, r.strategy) for r in report.merges] == [
        ("m_ok", "success", "insert"), ("m_empty", "success", "upsert"),
        ("m_fail", "error", "full_merge"), ("m_skip", "skipped", "upsert")]
    text = format_markdown(report)
    assert "| `m_ok` | success | insert | 3 | 0 | 0 | 0 | 3 |  |  |  |" in text
    assert "| `m_empty` | success | upsert |  |  |  |  |  |  | --empty |  |" in text
    assert "| `m_fail` | error | full_merge |  |  |  |  |  |  |  |  |" in text
    assert "Other nodes: 1 model, 1 test (1 fail, 1 success)." in text
    assert "**2 nodes failed:**" in text
    # the error on one line, as code: its backticks and pipes kept, dbt's macro stack left out
    assert ("- `m_fail` (error): `` Compilation Error: dbt_merge: model 'm_fail': a | b `c` ``\n"
            in text)
    assert "- `not_null_plain_id` (fail): `Got 2 results`" in text
    assert "Skipped by dbt (an upstream node failed): `m_skip`." in text
    assert "DRY RUN" not in text.split("| DRY RUN |", 1)[1]

    # without the manifest, a merge model that never reported cannot be told from other models
    assert [r.model for r in build_report(data).merges] == ["m_ok", "m_empty"]


def test_markdown_cells_are_escaped():
    text = format_markdown(build_report(run_results([result(
        "m", "success", "MERGE upsert: skipped (a|b): the target was not changed", "MERGE")])))
    assert "| `m` | success | upsert |  |  |  |  |  |  | `a\\|b` |  |" in text
    assert table(text) == [["`m`", "success", "upsert", *[""] * 6, "`a|b`", ""]]


@pytest.mark.parametrize("results", [[], [result("plain", "success", "OK", "OK")]])
def test_no_merge_model(results):
    assert "No merge model ran." in format_markdown(build_report(run_results(results)))


# every character Markdown (and GitHub: mentions, emoji, math, autolinks) gives a meaning to
MARKDOWN = "`|\\*_[]()<>&!#~$@:+-=.'\"{}^\n\r\t \u00a0\u2028\u202e"
NAMES = st.text(st.sampled_from(MARKDOWN) | st.characters(codec="utf-8"), max_size=12)
WORDS = st.text(st.sampled_from(MARKDOWN) | st.sampled_from("ab_ -"), max_size=8)


@settings(max_examples=150, deadline=None)
@given(names=st.lists(NAMES, min_size=1, max_size=4, unique=True), status=WORDS,
       message=st.text(st.sampled_from(MARKDOWN) | st.characters(codec="utf-8"), max_size=40),
       kind=WORDS.filter(lambda k: "." not in k and k != "model"))
def test_any_name_or_message_renders_as_itself(names, status, message, kind):
    """Each model name is one cell of its own row, shown as itself (unprintable characters
    escaped), whatever Markdown, HTML or GitHub would read in it; the failure list and the
    other nodes' line likewise."""
    results = [merged(name) for name in names]
    results.append(result("x", status, message, kind=kind or "k"))
    manifest = {**MANIFEST, "nodes": {f"model.p.{n}": {"config": {"materialized": "merge"}}
                                      for n in names}}
    failed = [{"unique_id": f"model.p.{n}", "status": "error", "message": message}
              for n in names]
    text = format_markdown(build_report(run_results(results + failed), manifest))
    rows = table(text)
    assert len(rows) == 2 * len(names), text
    for row, name in zip(rows, names + names, strict=True):
        assert len(row) == len(HEADERS), (row, text)
        assert code_span(row[0]) == shown(name), (row[0], name)
    for row in rows[: len(names)]:
        assert row[1:9] == ["success", "upsert", "1", "2", "0", "1", "4", ""], row
    failures = [line for line in text.splitlines() if line.startswith("- ")]
    assert len(failures) == len(names) + (status in ("error", "fail", "runtime error"))
    for line, name in zip(failures, names, strict=False):
        head, _, rest = line[2:].partition(" (error)")
        assert code_span(head) == shown(name), line
        lines = [line.strip() for line in message.splitlines()]
        one_line = " ".join(" ".join(x for x in lines if not x.startswith(">")).split())
        if one_line:
            assert code_span(rest.removeprefix(": ")) == shown(one_line), line
        else:
            assert rest == "", line
    # nothing outside a code span carries Markdown, HTML or a mention from the file
    outside = re.sub(r"(`+).*?(?<!`)\1(?!`)", "", text)
    for ch in "<>&*_[]@$\\":
        assert ch not in outside.replace("**DRY RUN**", "").replace("**", ""), (ch, text)


# --- what is not a run's results ---------------------------------------------------------------


def _write(path: Path, content: object) -> Path:
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


BAD_FILES = {
    "empty": ("", "is empty"),
    "blank": ("  \n", "is empty"),
    "corrupt": ('{"metadata": {', "is not JSON (Expecting"),
    "truncated": (json.dumps(run_results([merged("m")]))[:-30], "is not JSON"),
    "array": ([], "holds a JSON array, not dbt's run_results.json"),
    "string": ('"run"', "holds a JSON string, not dbt's run_results.json"),
    "no metadata": ({"results": []}, "is not a dbt artifact (no metadata.dbt_schema_version)"),
    "manifest": (MANIFEST, "is dbt's manifest.json (schema manifest/v12), not the "
                 "run_results.json of a run"),
    "catalog": ({"metadata": {"dbt_schema_version": SCHEMAS.format("catalog", 1)}, "nodes": {}},
                "is dbt's catalog.json (schema catalog/v1)"),
    "sources": ({"metadata": {"dbt_schema_version": SCHEMAS.format("sources", 3)}},
                "is dbt's sources.json (schema sources/v3)"),
    "v5": (run_results([merged("m")], version=5),
           "is run_results.json of schema version v5; this dbt-merge reads v6"),
    "v7": (run_results([merged("m")], version=7), "schema version v7"),
    "compile": (run_results([result("m", "success")], which="compile"),
                "holds the results of `dbt compile`, which runs no model"),
    "docs generate": (run_results([result("m", "success")], which="generate"),
                      "holds the results of `dbt docs generate`, which runs no model"),
    "test": (run_results([result("t", "pass", kind="test")], which="test"),
             "holds the results of `dbt test`, which runs no model"),
    "seed": (run_results([result("s", "success", kind="seed")], which="seed"),
             "`dbt seed`"),
    "show": (run_results([result("m", "success")], which="show"), "`dbt show`"),
    "no command": (run_results([merged("m")], which=None), "does not say which dbt command"),
    "results not a list": (run_results({"a": 1}), "results is not an array"),
    "result not an object": (run_results([1]), "results[0] is not an object"),
    "no unique_id": (run_results([{"status": "success"}]), "results[0].unique_id is missing"),
    "status a number": (run_results([{**merged("m"), "status": 3}]),
                        "results[0].status is not a string"),
    "adapter_response a list": (run_results([{**merged("m"), "adapter_response": []}]),
                                "results[0].adapter_response is not an object"),
    "statistics unreadable": (run_results([result("m", "success", "MERGE 3", "MERGE")]),
                              "model m: adapter_response code 'MERGE' but no merge statistics"),
}


def _report(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(["report", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_not_a_run_is_refused_naming_the_file(case, tmp_path, capsys):
    content, fragment = BAD_FILES[case]
    path = _write(tmp_path / "run_results.json", content)
    code, out, err = _report([str(path)], capsys)
    assert (code, out) == (1, ""), (code, out, err)
    assert err.startswith(f"dbt-merge: error: {path}") and err.count("\n") == 1, err
    assert fragment in err, err
    with pytest.raises(ReportError, match=re.escape(fragment)):
        load_report(path)


def test_a_bad_manifest_is_refused_naming_it(tmp_path, capsys):
    path = _write(tmp_path / "run_results.json", run_results([merged("m")]))
    beside = tmp_path / "manifest.json"
    for content, fragment in [
        ("{", "is not JSON"),
        (run_results([]), "is dbt's run_results.json (schema run-results/v6), not a "
                          "manifest.json"),
        ({**MANIFEST, "metadata": {"dbt_schema_version": SCHEMAS.format("manifest", 11)}},
         "is manifest.json of schema version v11; this dbt-merge reads v12"),
        ({**MANIFEST, "nodes": []}, "nodes is not an object"),
    ]:
        _write(beside, content)
        code, out, err = _report([str(path)], capsys)
        assert (code, out) == (1, ""), err
        assert err.startswith(f"dbt-merge: error: {beside}") and fragment in err, err
        other = _write(tmp_path / "other.json", content)
        code, _, err = _report([str(path), "--manifest", str(other)], capsys)
        assert code == 1 and err.startswith(f"dbt-merge: error: {other}") and fragment in err
    beside.unlink()
    assert _report([str(path)], capsys)[0] == 0  # no manifest beside it: none read
    code, _, err = _report([str(path), "--manifest", str(beside)], capsys)
    assert (code, err) == (1, f"dbt-merge: error: cannot read {beside}: "
                              "No such file or directory\n")


def test_missing_or_unreadable_files(tmp_path, capsys):
    code, _, err = _report([str(tmp_path / "missing.json")], capsys)
    assert (code, err) == (1, f"dbt-merge: error: cannot read {tmp_path / 'missing.json'}: "
                              "No such file or directory\n")
    code, _, err = _report([str(tmp_path)], capsys)
    assert code == 1 and err.startswith(f"dbt-merge: error: cannot read {tmp_path}: "), err
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00{")
    code, _, err = _report([str(binary)], capsys)
    assert code == 1 and f"{binary} is not text (UTF-8)" in err, err
    nested = _write(tmp_path / "nested.json", "[" * 100_000 + "]" * 100_000)
    code, _, err = _report([str(nested)], capsys)
    assert code == 1 and f"{nested} is not JSON" in err, err
    good = _write(tmp_path / "good.json", run_results([merged("m")]))
    code, _, err = _report([str(good), "--output", str(tmp_path / "no" / "summary.md")], capsys)
    assert code == 1 and err.startswith(f"dbt-merge: error: cannot write "
                                        f"{tmp_path / 'no' / 'summary.md'}: "), err


def test_build_and_retry_results_are_reported(tmp_path, capsys):
    """`dbt build` runs models (their rows) and tests, seeds, snapshots (the other nodes);
    `dbt retry` writes the retried command's name."""
    for which in ("run", "build", "retry"):
        path = _write(tmp_path / f"{which}.json", run_results(
            [merged("m"), result("t", "pass", kind="test")], which=which))
        code, out, err = _report([str(path)], capsys)
        assert (code, err) == (0, ""), err
        assert "| `m` | success | upsert | 1 | 2 | 0 | 1 | 4 |  |  |  |" in out
        assert "Other nodes: 1 test (1 pass)." in out


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(st.sampled_from(MARKDOWN + "abMERGE0123 ,:")),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["unique_id", "status", "message", "adapter_response",
                                       "code", "_message", "results", "metadata", "args",
                                       "which", "nodes", "config", "x"]), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=JSON, where=st.sampled_from(
    ["file", "results", "result", "unique_id", "status", "message", "adapter_response",
     "code", "_message", "args", "which", "metadata", "manifest", "nodes", "node", "config"]))
def test_any_json_is_a_report_or_one_error_line(shape, where, tmp_path, capsys):
    """A valid file with any JSON value put in one place: a report (exit 0) or one line naming
    the file (exit 1), never a traceback."""
    data = run_results([merged("m"), result("f", "error", "boom")])
    manifest = json.loads(json.dumps(MANIFEST))
    manifest["nodes"]["model.p.f"] = {"config": {"materialized": "merge"}}
    if where == "file":
        data = shape
    elif where == "results":
        data["results"] = shape
    elif where == "result":
        data["results"][1] = shape
    elif where in ("unique_id", "status", "message", "adapter_response"):
        data["results"][0][where] = shape
    elif where in ("code", "_message"):
        data["results"][0]["adapter_response"][where] = shape
    elif where == "args":
        data["args"] = shape
    elif where == "which":
        data["args"]["which"] = shape
    elif where == "metadata":
        data["metadata"] = shape
    elif where == "manifest":
        manifest = shape
    elif where == "nodes":
        manifest["nodes"] = shape
    elif where == "node":
        manifest["nodes"]["model.p.f"] = shape
    else:
        manifest["nodes"]["model.p.f"]["config"] = shape
    path = _write(tmp_path / "run_results.json", data)
    _write(tmp_path / "manifest.json", manifest)
    code, out, err = _report([str(path)], capsys)
    if code == 0:
        assert err == "" and out.startswith("### dbt-merge: merge statistics\n"), err
    else:
        assert code == 1 and out == "", (code, out, err)
        assert re.fullmatch(r"dbt-merge: error: [^\n]+\n", err), err
        assert str(tmp_path) in err, err


# --- the installed command ---------------------------------------------------------------------


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT / "adapter"), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "dbt_merge.cli", "report", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)


def test_the_command_exits_non_zero_with_one_line(tmp_path):
    (tmp_path / "target").mkdir()
    _write(tmp_path / "target" / "manifest.json", MANIFEST)
    done = _cli("target/manifest.json", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, ""), done
    assert done.stderr == (
        "dbt-merge: error: target/manifest.json is dbt's manifest.json (schema manifest/v12), "
        "not the run_results.json of a run: pass the run_results.json that `dbt run` or "
        "`dbt build` wrote (target/run_results.json).\n")
    _write(tmp_path / "target" / "run_results.json", run_results([], which="compile"))
    done = _cli("target/run_results.json", cwd=tmp_path)
    assert done.returncode == 1 and "`dbt compile`, which runs no model" in done.stderr, done
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    _write(tmp_path / "target" / "run_results.json", run_results([merged("a`b|c\nd")]))
    done = _cli("target/run_results.json", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, ""), done
    assert table(done.stdout)[0][0] == "``a`b|c\\nd``"


def test_the_ci_script_posts_the_error_of_a_file_that_is_not_a_run(tmp_path):
    """examples/ci/merge_report.sh: a report to post exits 0; the results of `dbt test` (the
    step wired after the wrong command) post dbt-merge's error line instead, and exit 1."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "dbt-merge"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m dbt_merge.cli "$@"\n')
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "adapter"),
                                                       os.environ.get("PYTHONPATH")]))}
    env.pop("GITHUB_RUN_ID", None)
    script = ROOT / "examples" / "ci" / "merge_report.sh"

    def post(content: object) -> subprocess.CompletedProcess:
        results = _write(tmp_path / "run_results.json", content)
        (tmp_path / "summary.md").write_text("")
        return subprocess.run(["bash", str(script), str(results), str(tmp_path / "out.md")],
                              env=env, capture_output=True, text=True, timeout=120)

    done = post(run_results([merged("m")]))
    assert done.returncode == 0, done.stderr
    comment = (tmp_path / "out.md").read_text()
    assert comment.startswith("<!-- dbt-merge report -->\n### dbt-merge: merge statistics\n")
    assert (tmp_path / "summary.md").read_text() in comment
    assert "| `m` | success | upsert | 1 | 2 | 0 | 1 | 4 |  |  |  |" in comment

    done = post(run_results([result("t", "pass", kind="test")], which="test"))
    assert done.returncode == 1, done
    error = (f"dbt-merge: error: {tmp_path / 'run_results.json'} holds the results of `dbt test`, "
             "which runs no model")
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("### dbt-merge: merge statistics\n\nNo report: \n\n```text\n"
                              + error), summary
    assert summary.endswith("```\n") and summary.count("dbt-merge: error:") == 1, summary
    assert (tmp_path / "out.md").read_text() == "<!-- dbt-merge report -->\n" + summary


def test_a_history_merge_reports_its_versions():
    """strategy='history' adds `, N versions` to the console line; the report reads it and shows a
    versions column only when such a merge ran."""
    from dbt_merge.report import MergeRow, RunReport, format_markdown, parse_stats_message

    line = ("MERGE history: 1 inserted, 2 updated, 0 deleted, 3 unchanged, 6 total, 1 held back, "
            "9 versions")
    stats = parse_stats_message(line)
    assert stats["versions"] == 9 and stats["held_back"] == 1 and stats["counts"]["total"] == 6
    assert "versions" not in parse_stats_message("MERGE upsert: 1 inserted, 0 updated, 0 deleted, "
                                                 "0 unchanged, 1 total")
    rows = [MergeRow("h", "success", **stats), MergeRow("u", "success", "upsert",
                                                       {k: 1 for k in stats["counts"]})]
    text = format_markdown(RunReport("run", rows, []))
    assert "| held back | versions | skipped |" in text and "| 1 | 9 |" in text
    assert "versions" not in format_markdown(RunReport("run", rows[1:], []))


# --- the macro's line and the report's reading of it: one contract ----------------------------


def _console_line(strategy: str, stats: dict) -> tuple[str, str, int]:
    """(message, code, rows_affected) that macros/stats/report_merge_stats.sql hands dbt for
    these statistics, rendered by the package's own macro (the Python doors' stand-in context)."""
    from dbt_merge.render import MacroContext

    stored: dict = {}

    def fail(message: str) -> None:
        raise AssertionError(message)

    macros = MacroContext({}, lambda sql: ([], []), fail, context={
        "store_raw_result": lambda name, message, code, rows_affected: stored.update(
            name=name, message=message, code=code, rows_affected=rows_affected),
        "log": lambda *args, **kwargs: "",
    })
    macros.report_merge_stats(strategy, stats)
    assert stored["name"] == "main"
    return stored["message"], stored["code"], stored["rows_affected"]


COUNT = st.integers(min_value=0, max_value=10**12)


@settings(max_examples=200, deadline=None)
@given(strategy=st.sampled_from(["upsert", "insert", "update", "full_merge", "deduplicate",
                                 "history"]),
       counts=st.fixed_dictionaries({k: COUNT for k in
                                     ("inserted", "updated", "deleted", "unchanged", "total")}),
       held_back=st.none() | COUNT, versions=st.none() | COUNT, dry_run=st.booleans(),
       skipped=st.none() | st.sampled_from(["--empty", "--sample"]))
def test_the_report_reads_back_every_line_the_macro_writes(strategy, counts, held_back, versions,
                                                          dry_run, skipped):
    """The statistics reach `dbt-merge report` as the console line dbt stores (a model's adapter
    response carries only a message, a code and a row count): whatever the macro writes for a
    merge's statistics, the report reads back the same numbers, so a change to either that
    the other does not follow fails here."""
    stats = {"skipped": skipped} if skipped else dict(counts)
    if not skipped:
        if held_back is not None:
            stats["held_back"] = held_back
        if versions is not None:
            stats["versions"] = versions
        if dry_run:
            stats["dry_run"] = True
    message, code, rows_affected = _console_line(strategy, stats)
    parsed = parse_stats_message(message)
    if skipped:
        assert parsed == {"strategy": strategy, "skipped": skipped}, message
        assert (code, rows_affected) == ("MERGE", 0)
        return
    assert parsed == {"strategy": strategy, "counts": counts, "held_back": held_back,
                      "dry_run": dry_run,
                      **({"versions": versions} if versions is not None else {})}, message
    assert code == ("DRY RUN" if dry_run else "MERGE")
    assert rows_affected == (0 if dry_run else
                             counts["inserted"] + counts["updated"] + counts["deleted"])
