"""`dbt-merge inspect` on the test project (parsed by dbt, read from the embedded ClickHouse)."""

from __future__ import annotations

import shutil

import pytest
from ch_data import PROJECT, project_args
from dbt_merge.cli import INSPECT_HEADERS, main

pytestmark = pytest.mark.clickhouse


def _lines(out: str) -> dict[str, str]:
    return {line.split()[0]: line for line in out.splitlines()[2:]}


def test_inspect_prints_engine_keys_and_decision(ch, capsys):
    code = main(["inspect", *project_args("duckdb")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.splitlines()[0].split() == list(INSPECT_HEADERS)
    lines = _lines(out)
    assert len(lines) == 18
    assert lines["ch.rmt"].split()[:9] == [
        "ch.rmt",
        "ch_a",
        "rmt",
        "ReplacingMergeTree",
        "k",
        "ver",
        "is_deleted=is_deleted",
        "yes",
        "default",
    ]
    assert "sum=a,b" in lines["ch.smt"]
    assert lines["ch.vcmt"].split()[3:8] == [
        "VersionedCollapsingMergeTree",
        "k,ver",
        "ver",
        "sign",
        "yes",
    ]
    assert "Distributed -> ReplacingMergeTree" in lines["ch.dist"]
    assert " no " in lines["ch.smt"] and " no " in lines["ch.vw"] and " no " in lines["ch.mt"]
    assert "probed, FINAL supported" in lines["ch.mv"]
    assert "probed, FINAL not supported" in lines["ch.logt"]
    assert "use_final: false" in lines["ch_raw.rmt"]
    assert "use_final: true" in lines["ch_raw.cmt"] and "use_final: true" in lines["ch_raw.smt"]


def test_inspect_lists_only_sources_marked_with_the_plugin(ch, capsys):
    code = main(["inspect", *project_args("duckdb"), "--plugin", "not_clickhouse"])
    assert code == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_land_fails_before_loading_when_final_is_forced_on_merge_tree(ch, capsys, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("target", "logs"))
    sources = project / "models" / "sources.yml"
    sources.write_text(
        sources.read_text().replace(
            "      - name: mt\n", "      - name: mt\n        meta: {use_final: true}\n", 1
        )
    )
    args = ["--project-dir", str(project), "--profiles-dir", str(PROJECT), "--target", "spark"]
    assert main(["land", *args]) == 1
    err = capsys.readouterr().err
    assert "source ch.mt: use_final is true but engine MergeTree cannot take FINAL" in err
    assert "Traceback" not in err
