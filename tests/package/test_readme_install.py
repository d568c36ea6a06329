"""The packages.yml snippets of the README and the install page work as written: `dbt deps`
installs the dbt package and a project using it parses. The git form is fetched from a local
bare clone of this repository (no network here) at the snippet's own revision, the release's
commit, which every clone of the history holds (no tag needed); the local form is used
verbatim, with the checkout placed where its relative path points; the form without git access
copies the dbt package the Python package carries (`dbt-merge dbt-package --copy`)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from dbt.cli.main import dbtRunner
from dbt_merge.cli import main

ROOT = Path(__file__).resolve().parents[2]
PROFILES_DIR = ROOT / "integration_tests"
PAGES = {
    "README.md": lambda text: text.split("## Installing it in your project", 1)[1]
    .split("\n## ", 1)[0],
    "docs/install.md": lambda text: text.split("## The dbt package", 1)[1].split("\n## ", 1)[0],
}


def _install_snippets(page: str) -> dict[str, dict]:
    """The packages.yml snippets of a page's install section, by form (git / local / copy)."""
    section = PAGES[page]((ROOT / page).read_text())
    snippets = {}
    for block in re.findall(r"```yaml\n(.*?)```", section, flags=re.S):
        doc = yaml.safe_load(block)
        if isinstance(doc, dict) and "packages" in doc:
            (form,) = {"git", "local"} & set(doc["packages"][0])
            if form == "local" and not doc["packages"][0]["local"].startswith("."):
                form = "copy"  # the folder `dbt-merge dbt-package --copy` makes in the project
            assert form not in snippets, (page, form)
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


def test_the_pages_show_every_form():
    assert set(_install_snippets("README.md")) == {"git", "local"}
    assert set(_install_snippets("docs/install.md")) == {"git", "local", "copy"}
    assert _install_snippets("README.md")["git"] == _install_snippets("docs/install.md")["git"]


def test_git_snippet_installs_at_its_revision(tmp_path):
    """At the release's commit as the snippet names it: no tag is made here, and none is
    needed."""
    entry = _install_snippets("docs/install.md")["git"]["packages"][0]
    bare = tmp_path / "dbt_merge.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(ROOT), str(bare)], check=True)
    packages = {"packages": [{**entry, "git": bare.as_uri()}]}
    project = _project(tmp_path / "project", packages)
    _deps_and_parse(project)
    installed = project / "dbt_packages" / "dbt_merge"
    shown = subprocess.run(["git", "-C", str(bare), "show", f"{entry['revision']}:dbt_project.yml"],
                           capture_output=True, text=True, check=True).stdout
    assert (installed / "dbt_project.yml").read_text() == shown


@pytest.mark.parametrize("page", sorted(PAGES))
def test_local_snippet_installs(tmp_path, page):
    snippet = _install_snippets(page)["local"]
    project = _project(tmp_path / "project", snippet)
    checkout = (project / snippet["packages"][0]["local"]).resolve()
    if not checkout.exists():
        checkout.symlink_to(ROOT)
    else:
        pytest.fail(f"the snippet's local path {checkout} already exists")
    _deps_and_parse(project)


def test_the_dbt_package_the_python_package_carries_installs(tmp_path, monkeypatch, capsys):
    """docs/install.md's form without access to the repository: the command it shows, run in
    the project's folder, then its packages.yml."""
    snippet = _install_snippets("docs/install.md")["copy"]
    project = _project(tmp_path / "project", snippet)
    section = PAGES["docs/install.md"]((ROOT / "docs/install.md").read_text())
    (command,) = re.findall(r"^dbt-merge (dbt-package --copy \S+)$", section, re.M)
    monkeypatch.chdir(project)
    assert main(command.split()) == 0
    assert capsys.readouterr().out.strip() == str(project / snippet["packages"][0]["local"])
    _deps_and_parse(project)
