"""`dbt-merge inspect` and `land` on the test project (parsed by dbt, read from the embedded
ClickHouse); without ClickHouse (no network: a closed port of this machine): one error line,
and a project without ClickHouse sources connects to nothing."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from ch_data import PROJECT, project_args
from dbt_merge.cli import INSPECT_HEADERS, main
from duckdb_env import forget_dbt_duckdb_env

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _no_earlier_dbt_duckdb_env():
    """Each command parses the project as a fresh `dbt-merge` process does: dbt-duckdb keeps the
    environment of an earlier in-process run (another test's project, without the ClickHouse
    plugin), and would load this project's sources into it ("Plugin clickhouse not found")."""
    forget_dbt_duckdb_env()


def _lines(out: str) -> dict[str, str]:
    return {line.split()[0]: line for line in out.splitlines()[2:]}


@pytest.mark.clickhouse
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


@pytest.mark.clickhouse
def test_inspect_lists_only_sources_marked_with_the_plugin(ch, capsys):
    code = main(["inspect", *project_args("duckdb"), "--plugin", "not_clickhouse"])
    assert code == 0
    assert capsys.readouterr().out == NO_SOURCE.format(project=PROJECT, plugin="not_clickhouse",
                                                       doing="inspect")


@pytest.mark.clickhouse
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


NO_SOURCE = (
    "No source of the dbt project in {project} is marked as a ClickHouse source (`plugin: "
    "{plugin}` in its meta or config), so there is nothing to {doing}; nothing was connected "
    "to. Pass --plugin NAME if the sources name the plugin otherwise.\n"
)


@pytest.fixture
def closed_port():
    """A port of this machine that nothing listens on (bound here, never listening)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    yield sock.getsockname()[1]
    sock.close()


@pytest.fixture
def no_clickhouse(monkeypatch, closed_port):
    """The environment of a machine whose ClickHouse is not running: the profile's DSN (and
    CLICKHOUSE_DSN) point at a closed port; the Spark target's variables are set (dbt parses
    them), though no Spark starts. No environment of an earlier in-process dbt-duckdb run is
    left for dbt's parse to load the project's sources into."""
    forget_dbt_duckdb_env()
    dsn = f"http://127.0.0.1:{closed_port}"
    for var in ("CLICKHOUSE_HOST", "CLICKHOUSE_PORT", "CLICKHOUSE_CHDB_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CLICKHOUSE_DSN", dsn)
    monkeypatch.setenv("ICEBERG_JAR", "/nowhere/iceberg.jar")
    monkeypatch.setenv("SPARK_STATE_DIR", "/nowhere")
    return dsn


def _project_without_clickhouse(root: Path) -> Path:
    """A dbt project of one model and one source, none of it ClickHouse (a DuckDB profile)."""
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(
        "name: no_ch\nversion: '1.0'\nconfig-version: 2\nprofile: no_ch\n")
    (root / "profiles.yml").write_text(
        "no_ch:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n"
        f"      path: {root / 'no_ch.duckdb'}\n")
    (root / "models" / "m.sql").write_text("select 1 as id")
    (root / "models" / "sources.yml").write_text(
        "version: 2\nsources:\n  - name: raw\n    tables:\n      - name: t\n")
    return root


@pytest.mark.parametrize("command", ["inspect", "land"])
def test_a_project_without_clickhouse_sources_connects_to_nothing(
    command, no_clickhouse, tmp_path, capsys
):
    project = _project_without_clickhouse(tmp_path / "project")
    code = main([command, "--project-dir", str(project), "--profiles-dir", str(project)])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    assert out == NO_SOURCE.format(project=project, plugin="clickhouse", doing=command)
    assert not (project / "target").exists()  # the project's target/ as the user left it


@pytest.mark.parametrize("command", ["inspect", "land"])
def test_the_profiles_yml_of_the_folder_it_runs_in_is_read_as_dbt_reads_it(
    command, no_clickhouse, tmp_path, capsys, monkeypatch
):
    """Without --profiles-dir or DBT_PROFILES_DIR, dbt reads ./profiles.yml before
    ~/.dbt/profiles.yml (the example project keeps its profiles there), and so do inspect and
    land."""
    project = _project_without_clickhouse(tmp_path / "project")
    monkeypatch.delenv("DBT_PROFILES_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.dbt/profiles.yml
    monkeypatch.chdir(project)
    code = main([command])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    assert out == NO_SOURCE.format(project=".", plugin="clickhouse", doing=command)


@pytest.mark.parametrize("command, target", [("inspect", "duckdb"), ("land", "spark")])
def test_clickhouse_unreachable_is_one_error_line(command, target, no_clickhouse, capsys):
    code = main([command, *project_args(target)])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err == (
        f"dbt-merge: error: cannot connect to ClickHouse at {no_clickhouse} (from "
        "CLICKHOUSE_DSN): Connection refused. Start it, or point --dsn (or CLICKHOUSE_DSN, or "
        "CLICKHOUSE_HOST and CLICKHOUSE_PORT) at a ClickHouse server that is running.\n"
    )


def test_the_command_names_the_dsn_given(no_clickhouse, closed_port, tmp_path):
    """Through the installed command (a process of its own): the --dsn given wins, its
    password is not shown, and nothing but the one line reaches stderr."""
    dsn = f"http://user:secret@127.0.0.1:{closed_port}/db"
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("CLICKHOUSE")}
    env["CLICKHOUSE_DSN"] = no_clickhouse  # the profile's; --dsn is what inspect connects to
    env["PYTHONPATH"] = str(ROOT / "adapter")
    done = subprocess.run(
        [sys.executable, "-m", "dbt_merge.cli", "inspect", *project_args("duckdb"),
         "--dsn", dsn], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, ""), done
    assert done.stderr == (
        f"dbt-merge: error: cannot connect to ClickHouse at http://user:***@127.0.0.1:"
        f"{closed_port}/db (from --dsn): Connection refused. Start it, or point --dsn (or "
        "CLICKHOUSE_DSN, or CLICKHOUSE_HOST and CLICKHOUSE_PORT) at a ClickHouse server that "
        "is running.\n"
    )
