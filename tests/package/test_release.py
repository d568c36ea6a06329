"""A release is one version, one licence and one compatibility table, and its two halves (the
Python package and the dbt package) refuse to work together at different versions.

The metadata is read from the files a release ships (pyproject.toml, dbt_project.yml, README.md,
examples/ci, CHANGELOG.md, docs/compatibility.md); the halves' check runs dbt-duckdb in-process
on a copy of the dbt package that says another version."""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
from pathlib import Path

import dbt_merge
import dbt_merge.version
import duckdb
import pytest
import tomllib
import yaml
from dbt.cli.main import dbtRunner
from dbt_merge.cli import main
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
DBT_PROJECT = yaml.safe_load((ROOT / "dbt_project.yml").read_text())
VERSION = dbt_merge.__version__


# ------------------------------------------------------------------ one version


def test_the_version_is_declared_once_and_read_by_pyproject():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "dbt_merge.__version__"
    }
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), VERSION


def test_the_dbt_package_is_the_same_version():
    assert DBT_PROJECT["version"] == VERSION


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    assert done.returncode == 0, (
        f"git {' '.join(args)}: {done.stderr.strip()} (these tests need the repository's "
        "history: a plain `git clone`, not a shallow one)")
    return done.stdout


def _newest_release() -> tuple[str, str]:
    newest = max(dbt_merge.version.RELEASES, key=Version)
    return newest, dbt_merge.version.RELEASES[newest]


@pytest.mark.parametrize("release", sorted(dbt_merge.version.RELEASES))
def test_each_recorded_release_is_a_commit_of_the_history_of_that_version(release):
    """What a team pins exists in every clone: the recorded commit is an ancestor of HEAD, and
    its dbt_project.yml, __version__ and CHANGELOG.md say that release."""
    commit = dbt_merge.version.RELEASES[release]
    assert re.fullmatch(r"[0-9a-f]{40}", commit), commit
    assert _git("cat-file", "-t", commit).strip() == "commit"
    _git("merge-base", "--is-ancestor", commit, "HEAD")
    assert yaml.safe_load(_git("show", f"{commit}:dbt_project.yml"))["version"] == release
    init = _git("show", f"{commit}:adapter/dbt_merge/__init__.py")
    assert re.search(r'^__version__ = "(.+)"$', init, re.M).group(1) == release
    changelog = _git("show", f"{commit}:CHANGELOG.md")
    assert re.search(rf"^## \[{re.escape(release)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M)
    assert Version(release) <= Version(VERSION)
    # a tag of the release, where this clone has one, is that commit
    tag = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "-q", "--verify",
                          f"refs/tags/v{release}^{{commit}}"], capture_output=True, text=True)
    if tag.returncode == 0:
        assert tag.stdout.strip() == commit, f"the tag v{release} is not the release's commit"


def test_the_docs_and_the_ci_example_pin_the_newest_release():
    """Every revision the README, the install page, RELEASING.md's example and the CI example
    install is the newest recorded release's commit, in full."""
    release, commit = _newest_release()
    pages = {name: (ROOT / name).read_text() for name in (
        "README.md", "docs/install.md", "RELEASING.md", "examples/ci/dbt-merge-dry-run.yml")}
    for name, text in pages.items():
        pinned = re.findall(r"revision: (\S+)", text) + re.findall(r"git\+\S+@([^\"\s]+)", text)
        pinned += re.findall(r"git -C \S+ checkout (\S+)", text)
        assert pinned, name
        assert set(pinned) == {commit}, (name, pinned)
        assert f"release {release}" in text, name


def test_the_changelog_has_this_release_under_unreleased():
    headings = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings[:2] == ["Unreleased", VERSION]


def test_dbt_merge_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"dbt-merge {VERSION}\n"


def test_a_misspelt_option_is_named_not_taken_for_a_missing_command(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--versoin"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "dbt-merge: error: unrecognized arguments: --versoin (did you mean --version?)")
    with pytest.raises(SystemExit):
        main([])
    assert capsys.readouterr().err.splitlines()[-1] == (
        "dbt-merge: error: the following arguments are required: command")


def test_dbt_merge_dbt_package_prints_and_copies_the_dbt_package_of_this_release(
    tmp_path, capsys
):
    assert main(["dbt-package"]) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert folder == dbt_merge.version.dbt_package_dir()
    assert yaml.safe_load((folder / "dbt_project.yml").read_text())["version"] == VERSION
    shipped = sorted(p.relative_to(folder / "macros") for p in (folder / "macros").rglob("*.sql"))
    assert shipped == sorted(
        p.relative_to(ROOT / "macros") for p in (ROOT / "macros").rglob("*.sql"))
    assert main(["dbt-package", "--copy", str(tmp_path / "vendored")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "vendored")
    assert (tmp_path / "vendored" / "dbt_project.yml").read_text() == (
        ROOT / "dbt_project.yml").read_text()
    copied = sorted(p.relative_to(tmp_path / "vendored" / "macros")
                    for p in (tmp_path / "vendored" / "macros").rglob("*") if p.is_file())
    assert copied == shipped
    # a folder that exists is left as it is
    assert main(["dbt-package", "--copy", str(tmp_path / "vendored")]) == 1
    assert "exists already" in capsys.readouterr().err


def test_dbt_package_copy_refuses_folders_it_must_not_write(tmp_path, monkeypatch, capsys):
    """--copy expands a ~ the shell left as written, and refuses, writing nothing: a folder inside
    the dbt package (here a copy of it, as an installed wheel holds one: the copy would copy
    itself), a folder inside dbt_packages/ (dbt deps empties it), a dangling link (it would be
    followed to where it points)."""
    home, package = tmp_path / "home", tmp_path / "site" / "dbt_merge" / "dbt_package"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    shutil.copytree(dbt_merge.version.dbt_package_dir(), package)
    monkeypatch.setattr(dbt_merge.version, "dbt_package_dir", lambda: package)

    def files() -> list[str]:
        return sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")
                      if p.is_file() or p.is_symlink())

    before = files()
    assert main(["dbt-package", "--copy=~/vendored"]) == 0
    assert capsys.readouterr().out.strip() == str(home / "vendored")
    assert (home / "vendored" / "macros" / "flow" / "run_merge.sql").is_file()
    assert not (tmp_path / "~").exists()
    shutil.rmtree(home / "vendored")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    before = files()
    for given, said in [
        (str(package / "macros" / "vendor"),
         f"{package / 'macros' / 'vendor'} is inside the dbt package being copied "
         f"({package}); name a folder of your project"),
        (str(package), f"{package} exists already"),
        ("project/dbt_packages/dbt_merge",
         f"{tmp_path / 'project' / 'dbt_packages' / 'dbt_merge'} is inside a dbt_packages "
         "folder, which dbt deps empties; copy it to a folder of your project outside "
         "dbt_packages (e.g. dbt_merge_package) and name that in packages.yml as `local:`"),
        ("link", f"{tmp_path / 'link'} exists already"),
        ("link/sub", f"{tmp_path / 'link'} is a link to {tmp_path / 'nowhere'}, which does not "
                     "exist"),
    ]:
        assert main(["dbt-package", "--copy", given]) == 1, given
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith(f"dbt-merge: error: --copy {given}: {said}"), line
        assert files() == before, given


# ------------------------------------------------------------------ licence


def test_the_licence_is_apache_2_in_the_repository_and_the_metadata():
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE", "NOTICE"]
    assert (ROOT / "NOTICE").read_text().startswith("dbt_merge\n")


# ------------------------------------------------------------------ compatibility table


def _table(section: str) -> dict[str, dict[str, str]]:
    """The rows of a table of docs/compatibility.md under `## section`, by component."""
    text = (ROOT / "docs" / "compatibility.md").read_text()
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in body.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[2:]:
        cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True))
        rows[cells["component"]] = cells
    return rows


def _declared(cell: str) -> str:
    (code,) = re.findall(r"`([^`]+)`", cell)
    return code


def _bounds(specifiers: SpecifierSet) -> set[tuple[str, Version]]:
    return {(s.operator, Version(s.version)) for s in specifiers}


def _metadata_requirements() -> list[tuple[str, Requirement]]:
    """(where, requirement) of every dependency a user's install can pull in."""
    project = PYPROJECT["project"]
    found = [("dependencies", Requirement(r)) for r in project["dependencies"]]
    for extra, requirements in project["optional-dependencies"].items():
        if extra in ("test", "bench"):
            continue
        found += [(f"`{extra}`", Requirement(r)) for r in requirements]
    return [(where, r) for where, r in found if r.name != "dbt-merge"]


def test_the_compatibility_table_is_the_metadata():
    rows = {**_table("Engines"), **_table("Other dependencies")}
    python = rows.pop("Python")
    assert _declared(python["declared"]) == PYPROJECT["project"]["requires-python"]
    table = {}
    for component, cells in rows.items():
        requirement = Requirement(_declared(cells["declared"]))
        table[requirement.name.lower()] = (component, requirement, cells["declared in"])
    seen = set()
    for where, requirement in _metadata_requirements():
        name = requirement.name.lower()
        assert name in table, f"{requirement} ({where}) has no row in docs/compatibility.md"
        component, row, declared_in = table[name]
        assert (row.extras, row.specifier) == (requirement.extras, requirement.specifier), (
            f"{component}: the table says {row}, pyproject.toml ({where}) says {requirement}"
        )
        assert where in declared_in, f"{component}: the table does not say it is in {where}"
        seen.add(name)
    assert seen == set(table), f"rows that nothing declares: {set(table) - seen}"
    dbt_core = table["dbt-core"][1].specifier
    require_dbt = SpecifierSet(",".join(DBT_PROJECT["require-dbt-version"]))
    assert _bounds(require_dbt) == _bounds(dbt_core)


def _installed(component: str) -> str:
    """The version of a component this test run uses (the repository's environment)."""
    if component == "Python":
        return "{}.{}.{}".format(*sys.version_info[:3])
    if component == "Iceberg":
        import snowpark_connect_deps_iceberg as deps

        jar = Path(deps.get_jar_path("iceberg-spark-runtime-3.5_2.12-1.10.2.jar"))
        assert jar.is_file()
        return jar.stem.rsplit("-", 1)[1]
    distribution = Requirement(_declared(_table("Engines")[component]["declared"])).name
    return importlib.metadata.version(distribution)


def test_the_tested_versions_are_the_ones_make_test_runs():
    """Each tested cell of the engines table names the major.minor this run uses: when pip
    starts installing a newer release within a range, the table says so or this fails."""
    for component, cells in _table("Engines").items():
        tested = re.match(r"(\d+\.\d+)\b", cells["tested by `make test`"])
        assert tested, f"{component}: no version in its tested cell"
        installed = Version(_installed(component))
        assert f"{installed.major}.{installed.minor}" == tested.group(1), (
            f"{component}: docs/compatibility.md says {tested.group(1)} is tested, this run "
            f"uses {installed}"
        )
        if component == "Python":
            assert installed in SpecifierSet(_declared(cells["declared"]))
        elif component != "Iceberg":
            assert installed in Requirement(_declared(cells["declared"])).specifier


# ------------------------------------------------------------------ the halves check each other


PROFILE = """
release:
  target: duckdb
  outputs:
    duckdb:
      type: duckdb
      path: "{path}"
      threads: 1
"""


def _project_with_dbt_package(tmp_path: Path, version: str | None) -> Path:
    """A dbt project whose installed dbt_merge package is this checkout's macros under a
    dbt_project.yml saying `version` (none: no `version:` line); a plain merge model, a
    `location` model and a model with a history table."""
    package = tmp_path / "project" / "dbt_packages" / "dbt_merge"
    package.mkdir(parents=True)
    declared = {k: v for k, v in DBT_PROJECT.items() if k != "version"}
    if version is not None:
        declared = {"name": declared.pop("name"), "version": version, **declared}
    (package / "dbt_project.yml").write_text(yaml.safe_dump(declared, sort_keys=False))
    (package / "macros").symlink_to(ROOT / "macros")
    project = package.parents[1]
    (project / "dbt_project.yml").write_text(yaml.safe_dump(
        {"name": "release", "version": "1.0.0", "config-version": 2, "profile": "release"}
    ))
    (project / "profiles.yml").write_text(PROFILE.format(path=tmp_path / "release.duckdb"))
    models = project / "models"
    models.mkdir()
    select = "select * from (values (1, 'a'), (2, 'b')) as t(id, v)"
    (models / "plain.sql").write_text(
        "{{ config(materialized='merge', unique_key='id') }}\n" + select)
    (models / "to_dataset.sql").write_text(
        "{{ config(materialized='merge', unique_key='id', location='"
        + str(tmp_path / "dataset") + "') }}\n" + select
    )
    (models / "with_history.sql").write_text(
        "{{ config(materialized='merge', unique_key='id', merge_history_table='history') }}\n"
        + select
    )
    return project


MODELS = ("plain", "to_dataset", "with_history")


def _run(project: Path, command: str = "run"):
    return dbtRunner().invoke(
        [command, "--project-dir", str(project), "--profiles-dir", str(project)]
    )


def _tables(tmp_path: Path) -> list[str]:
    con = duckdb.connect(str(tmp_path / "release.duckdb"))
    try:
        return sorted(t for (t,) in con.execute(
            "select table_name from information_schema.tables").fetchall())
    finally:
        con.close()


@pytest.mark.parametrize("version", ["9.9.9", None])
def test_a_dbt_package_of_another_version_runs_no_model_and_the_fix_works(tmp_path, version):
    """Checked once per invocation (dbt_merge's dbt plugin), whatever the models: a plain merge
    model is refused like a `location` or history model. The fix the message gives, followed as
    written (packages.yml naming the folder it names, dbt deps), runs every model."""
    project = _project_with_dbt_package(tmp_path, version)
    result = _run(project)
    assert not result.success and result.result is None  # stopped while reading the project
    message = " ".join(str(result.exception).split())
    said = ("is version 9.9.9" if version else
            "is of no version (its dbt_project.yml has no `version:`")
    assert "dbt_merge: the dbt package dbt_merge (packages.yml, installed in " in message
    assert said in message and "None" not in message, message
    assert f"but the Python package dbt-merge is version {VERSION}" in message
    assert message.endswith("Nothing was run."), message
    # nothing was written: no dataset, no lock beside it, no history table, no merge target
    assert list(tmp_path.glob("*dataset*")) == []
    assert not (tmp_path / "release.duckdb").exists() or _tables(tmp_path) == []
    # the fix, as the message writes it
    local = re.search(r"in packages.yml, `- local: ([^`]+)`", message).group(1)
    assert Path(local) == dbt_merge.version.dbt_package_dir()
    assert "`dbt-merge dbt-package` prints" in message
    (project / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": local}]}))
    assert _run(project, "deps").success
    fixed = _run(project)
    assert fixed.success, fixed.exception
    assert {r.node.name: r.adapter_response["_message"] for r in fixed.result.results} == {
        m: "MERGE upsert: 2 inserted, 0 updated, 0 deleted, 0 unchanged, 2 total" for m in MODELS}


def test_the_same_version_runs(tmp_path):
    project = _project_with_dbt_package(tmp_path, VERSION)
    result = _run(project)
    results = {r.node.name: r for r in result.result.results}
    for name in MODELS:
        assert str(results[name].status) == "success", (name, results[name].message)
        assert results[name].adapter_response["_message"].startswith("MERGE upsert: 2 inserted")


@pytest.mark.parametrize("version", ["9.9.9", None])
def test_the_jobs_the_dbt_package_hands_over_check_the_version_too(version):
    """Where the macros hand a model to the Python package (a `location` model's job, a DuckDB
    history table's), the version it passes is checked again (dbt's plugin aside)."""
    with pytest.raises(dbt_merge.version.VersionMismatchError) as refused:
        dbt_merge.version.check_dbt_package(version)
    message = str(refused.value)
    assert ("is version 9.9.9" if version else "is of no version") in message
    assert message.endswith("The target was not changed.")
    assert dbt_merge.version.mismatch(VERSION) is None
