"""`dbt-merge report` logic on run results as dbt writes them (no database): the messages
report_merge_stats.sql writes, failed and skipped merge models, Markdown escaping, bad input."""

from __future__ import annotations

import json

import pytest
from dbt_merge.cli import main
from dbt_merge.report import build_report, format_markdown, parse_stats_message

MANIFEST = {"nodes": {
    "model.p.m_fail": {"config": {"materialized": "merge", "strategy": "full_merge"}},
    "model.p.m_skip": {"config": {"materialized": "merge"}},
    "model.p.plain": {"config": {"materialized": "table"}},
}}


def result(name: str, status: str, message: str | None = None, code: str | None = None,
           kind: str = "model") -> dict:
    response = {"_message": message, "code": code, "rows_affected": 0} if code else {}
    return {"unique_id": f"{kind}.p.{name}", "status": status, "message": message,
            "adapter_response": response}


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
    run_results = {"args": {"which": "build"}, "results": [
        result("m_ok", "success", "MERGE insert: 3 inserted, 0 updated, 0 deleted, 0 unchanged, "
               "3 total", "MERGE"),
        result("m_empty", "success", "MERGE upsert: skipped (--empty): the target was not "
               "changed", "MERGE"),
        result("m_fail", "error", "Compilation Error in model m_fail (models/m_fail.sql)\n"
               "  dbt_merge: model 'm_fail': a | b\n  \n  > in macro raise_merge_error (x.sql)"),
        result("m_skip", "skipped"),
        result("plain", "success", "OK", "OK"),
        result("not_null_plain_id", "fail", "Got 2 results", kind="test"),
    ]}
    report = build_report(run_results, MANIFEST)
    assert [(r.model, r.status, r.strategy) for r in report.merges] == [
        ("m_ok", "success", "insert"), ("m_empty", "success", "upsert"),
        ("m_fail", "error", "full_merge"), ("m_skip", "skipped", "upsert")]
    text = format_markdown(report)
    assert "| `m_ok` | success | insert | 3 | 0 | 0 | 0 | 3 |  |  |  |" in text
    assert "| `m_empty` | success | upsert |  |  |  |  |  |  | --empty |  |" in text
    assert "| `m_fail` | error | full_merge |  |  |  |  |  |  |  |  |" in text
    assert "Other nodes: 1 model, 1 test (1 fail, 1 success)." in text
    assert "**2 nodes failed:**" in text
    assert "- `m_fail` (error): Compilation Error: dbt_merge: model 'm_fail': a | b\n" in text
    assert "- `not_null_plain_id` (fail): Got 2 results" in text
    assert "Skipped by dbt (an upstream node failed): `m_skip`." in text
    assert "DRY RUN" not in text.split("| DRY RUN |", 1)[1]

    # without the manifest, a merge model that never reported cannot be told from other models
    assert [r.model for r in build_report(run_results).merges] == ["m_ok", "m_empty"]


def test_markdown_cells_are_escaped():
    text = format_markdown(build_report({"results": [result(
        "m", "success", "MERGE upsert: skipped (a|b): the target was not changed", "MERGE")]}))
    assert "| `m` | success | upsert |  |  |  |  |  |  | a\\|b |  |" in text


def test_a_merge_code_without_statistics_is_an_error(tmp_path, capsys):
    path = tmp_path / "run_results.json"
    path.write_text(json.dumps({"results": [result("m", "success", "MERGE 3", "MERGE")]}))
    assert main(["report", str(path)]) == 1
    assert "m: adapter_response code 'MERGE' but no merge statistics" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.json")]) == 1
    assert "No such file" in capsys.readouterr().err


@pytest.mark.parametrize("results", [[], [result("plain", "success", "OK", "OK")]])
def test_no_merge_model(results):
    assert "No merge model ran." in format_markdown(build_report({"results": results}))
