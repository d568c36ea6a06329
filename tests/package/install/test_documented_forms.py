"""The install forms the docs show, run as written against this repository (a bare clone of
it stands for `https://github.com/your-org/dbt_merge.git`; no network but pip's): pip from git at
the release's commit, a clone checked out at that commit, the release's wheel, the CI example's
install step. They pin the release's commit, which every clone of the history holds, so they
work in a fresh clone where no tag was ever fetched. Each installs dbt-merge of that release
into a fresh virtualenv (`--no-deps`: what is tested is that the form finds and builds the
release; the extras' dependencies are tests/package/install/test_from_wheel.py's).

And `make dist` and `make docs` in a copy of the checkout without .venv: each builds from a
small virtualenv of its own (scripts/tools.sh) that holds no dbt, Spark or test library."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import dbt_merge.version
import pytest
from packaging.version import Version

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parents[3]
URL = "https://github.com/your-org/dbt_merge.git"
SECONDS = 900


def _run(args, cwd: Path, env: dict | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=SECONDS)
    assert done.returncode == 0, (args, done.stdout[-4000:], done.stderr[-4000:])
    return done.stdout


def _env(venv: Path | None = None) -> dict[str, str]:
    """A user's shell: nothing of this test run, the virtualenv first on PATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("DBT_")}
    if venv is not None:
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    return env


def _install_page_lines() -> list[str]:
    """The pip and git lines of docs/install.md's Python package section, in order."""
    text = (ROOT / "docs" / "install.md").read_text()
    section = text.split("## The Python package", 1)[1].split("\n## ", 1)[0]
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        lines += [line.split("  #")[0].strip() for line in block.splitlines()
                  if line.startswith(("pip install", "git "))]
    return lines


def test_every_documented_form_installs_the_release(tmp_path):
    release = max(dbt_merge.version.RELEASES, key=Version)
    commit = dbt_merge.version.RELEASES[release]
    lines = _install_page_lines()
    git_form = f'pip install "dbt-merge[duckdb] @ git+{URL}@{commit}"'
    wheel_form = f'pip install "dbt_merge-{release}-py3-none-any.whl[duckdb]"'
    assert lines == [git_form, f"git clone {URL}", f"git -C dbt_merge checkout {commit}",
                     'pip install "./dbt_merge[duckdb]"', wheel_form], lines
    # the README and the CI example install with the same git form
    readme = (ROOT / "README.md").read_text()
    assert f"`{git_form}`" in readme.replace("\n", " ")
    workflow = (ROOT / "examples" / "ci" / "dbt-merge-dry-run.yml").read_text()
    assert re.findall(r"^\s+run: (pip install .*)$", workflow, re.M) == [git_form]

    bare = tmp_path / "dbt_merge.git"
    _run(["git", "clone", "-q", "--bare", ROOT, bare], tmp_path)
    venv, work = tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    _run([sys.executable, "-m", "venv", venv], tmp_path, _env())
    env = _env(venv)
    # pip 23 (Python 3.11's own) refuses `name @ git+file:///path` (no host), which stands in
    # for the docs' https URL here; a current pip takes both
    _run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--upgrade", "pip"], work, env)

    def installed() -> str:
        version = _run([venv / "bin" / "python", "-c", "import importlib.metadata as m; "
                        "print(m.version('dbt-merge'))"], work, env).strip()
        _run([venv / "bin" / "python", "-m", "pip", "uninstall", "-q", "-y", "dbt-merge"],
             work, env)
        return version

    def shell(line: str) -> None:
        words = [w.replace(URL, bare.as_uri()) for w in shlex.split(line)]
        if words[0] == "pip":
            words = [venv / "bin" / "python", "-m", "pip", *words[1:], "--no-deps", "--quiet"]
        _run(words, work, env)

    shell(git_form)
    assert installed() == release
    for line in lines[1:4]:
        shell(line)
    assert installed() == release
    assert _run(["git", "-C", "dbt_merge", "rev-parse", "HEAD"], work).strip() == commit
    # the release's wheel, as its `make dist` builds it (less the set-up), then the page's line
    _run([venv / "bin" / "python", "-m", "pip", "install", "-q", "build"], work, env)
    _run([venv / "bin" / "python", "-m", "build", "-q", "--wheel", "--outdir", work,
          work / "dbt_merge"], work, env)
    shell(wheel_form)
    assert installed() == release


def test_make_dist_and_make_docs_need_python_and_pip_only(tmp_path):
    """From a copy of this checkout's files that has no .venv: both targets build, from
    .state/tools-venv, which holds no dbt."""
    copy = tmp_path / "checkout"
    tracked = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                   ROOT).split("\0")
    for name in filter(None, tracked):
        source, target = ROOT / name, copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        elif source.is_file():
            shutil.copy2(source, target)
    env = _env()
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if not p.startswith(str(ROOT)))
    _run(["make", "dist"], copy, env)
    assert sorted(p.name for p in (copy / "dist").iterdir()) == [
        f"dbt_merge-{dbt_merge.__version__}-py3-none-any.whl",
        f"dbt_merge-{dbt_merge.__version__}.tar.gz"]
    _run(["make", "docs"], copy, env)
    assert (copy / "site" / "index.html").is_file()
    assert not (copy / ".venv").exists()
    tools = copy / ".state" / "tools-venv" / "bin" / "python"
    missing = subprocess.run([tools, "-c", "import dbt"], capture_output=True, text=True)
    assert "No module named 'dbt'" in missing.stderr
