"""The README stays short and agrees with the pages it summarizes (no database, under a second).
The site itself is built strictly by scripts/docs.sh, which `make test` runs first."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _table_after(text: str, header: str) -> str:
    start = text.index(header)
    lines = []
    for line in text[start:].splitlines():
        if not line.startswith("|"):
            break
        lines.append(line)
    return "\n".join(lines)


def test_readme_is_at_most_45000_characters():
    assert len(README.read_text()) <= 45_000


def test_readme_benchmark_table_is_the_one_in_benchmarks_md():
    header = "| engine, data | strategy | ours |"
    readme = _table_after(README.read_text(), header)
    benchmarks = _table_after((ROOT / "BENCHMARKS.md").read_text(), header)
    assert readme.count("\n") > 10
    assert readme == benchmarks


def test_readme_links_to_files_that_exist():
    text = README.read_text()
    targets = {t.split("#", 1)[0] for t in re.findall(r"\]\(([^)#][^)]*)\)", text)}
    local = {t for t in targets if "://" not in t}
    assert "docs/errors.md" in local
    missing = sorted(t for t in local if not (ROOT / t).exists())
    assert not missing, f"README.md links to missing files: {missing}"
