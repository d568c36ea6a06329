"""The README's packages.yml snippets work as written: `dbt deps` installs the package, and a
project using it parses. The git form is fetched from a local bare clone of this repository (no
network here), tagged with the snippet's own revision at its HEAD (whether or not this
repository has that tag yet); the local form is used verbatim, with the
checkout placed where its relative path points."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from dbt.cli.main import dbtRunner

ROOT = Path(__file__).resolve().parents[1]
PROFILES_DIR = ROOT / "integration_tests"


def _install_snippets() -> dict[str, dict]:
    """The packages.yml snippets of the README's install section, by form (git / local)."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Installing it in your project", 1)[1].split("\n## ", 1)[0]
    snippets = {}
    for block in re.findall(r"```yaml\n(.*?)```", section, flags=re.S):
        doc = yaml.safe_load(block)
        if isinstance(doc, dict) and "packages" in doc:
            (form,) = {"git", "local"} & set(doc["packages"][0])
            snippets[form] = doc
    return snippets


def _project(root: Path, packages: dict) -> Path:
    root.mkdir(parents=True)
    (root / "dbt_project.yml").write_text(yaml.safe_dump({
        "name": "readme_install", "version": "0.1.0", "config-version": 2,
        "profile": "integration_tests",
    }))
    (root / "packages.yml").write_text(yaml.safe_dump(packages, sort_keys=False))
    return root


def _deps_and_parse(project: Path) -> None:
    common = ["--project-dir", str(project), "--profiles-dir", str(PROFILES_DIR)]
    deps = dbtRunner().invoke(["deps", *common])
    assert deps.success, deps.exception
    assert (project / "dbt_packages" / "dbt_merge" / "dbt_project.yml").exists()
    parsed = dbtRunner().invoke(["parse", *common, "--target", "duckdb"])
    assert parsed.success, parsed.exception
    assert "macro.dbt_merge.validate_merge_config" in parsed.result.macros


def test_readme_shows_both_forms():
    assert set(_install_snippets()) == {"git", "local"}


def test_git_snippet_installs(tmp_path):
    snippet = _install_snippets()["git"]
    entry = snippet["packages"][0]
    bare = tmp_path / "dbt_merge.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(ROOT), str(bare)], check=True)
    # -f: the release's tag may exist already (cloned with the rest); the clone's HEAD is tested
    subprocess.run(["git", "-C", str(bare), "tag", "-f", str(entry["revision"])], check=True)
    packages = {"packages": [{**entry, "git": bare.as_uri()}]}
    _deps_and_parse(_project(tmp_path / "project", packages))


def test_local_snippet_installs(tmp_path):
    snippet = _install_snippets()["local"]
    project = _project(tmp_path / "project", snippet)
    checkout = (project / snippet["packages"][0]["local"]).resolve()
    if not checkout.exists():
        checkout.symlink_to(ROOT)
    else:
        pytest.fail(f"the snippet's local path {checkout} already exists")
    _deps_and_parse(project)
