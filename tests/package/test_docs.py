"""The README stays short and agrees with the pages it points to; the docs site is one a user can
live in (its home page sends nobody to the README, it browses and searches from the disk); no
user-facing text names a tracker number (no database, under a second). The site itself is built
strictly by scripts/docs.sh, which `make test` runs first; tests/package/test_examples.py holds the
docs' examples to the files of examples/."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def _section(text: str, heading: str) -> str:
    return text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]


def test_readme_is_short():
    assert len(README.read_text()) <= 8_000


def test_readme_headline_numbers_are_benchmarks_md():
    """Each ratio the README's headline quotes is one BENCHMARKS.md reports."""
    numbers = _section(README.read_text(), "## The numbers")
    quoted = re.findall(r"\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?x\b", numbers)
    assert len(quoted) >= 4, quoted
    benchmarks = (ROOT / "BENCHMARKS.md").read_text()
    missing = [q for q in quoted if not re.search(rf"(?<![\d.-]){re.escape(q)}", benchmarks)]
    assert not missing, f"the README quotes {missing}, which BENCHMARKS.md does not report"
    assert "| engine, data | strategy |" not in README.read_text(), "the table is BENCHMARKS.md's"


def test_readme_names_no_test_counts():
    counts = re.findall(r"\b\d[\d,]* (?:tests|passed|cases|failed)\b", README.read_text())
    assert not counts, counts


def test_readme_links_to_files_that_exist():
    text = README.read_text()
    targets = {t.split("#", 1)[0] for t in re.findall(r"\]\(([^)#][^)]*)\)", text)}
    local = {t for t in targets if "://" not in t}
    assert {"docs/install.md", "BENCHMARKS.md", "docs/testing.md"} <= local
    missing = sorted(t for t in local if not (ROOT / t).exists())
    assert not missing, f"README.md links to missing files: {missing}"


def test_the_home_page_does_not_send_readers_to_the_readme():
    """The site holds what a user needs: install, a first model per engine, the example project."""
    home = (DOCS / "index.md").read_text()
    assert "README" not in home
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    pages = set(re.findall(r"[\w/-]+\.md", str(nav)))
    for page in ("install.md", "first-model-duckdb.md", "first-model-spark.md", "python.md",
                 "examples.md", "configuration.md"):
        assert page in pages and f"]({page}" in home, page


def test_the_configuration_table_has_a_type_for_every_option():
    lines = (DOCS / "configuration.md").read_text().split("\n| config |", 1)[1].splitlines()
    header, rows = lines[0], []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    assert header.split("|")[0].strip() == "type"
    assert len(rows) >= 20
    types = {row.split("|")[1].strip("` "): row.split("|")[2].strip() for row in rows}
    assert types["strategy"] == "string" and types["unique_key"] == "string or list of strings"
    assert types["max_delete_fraction"].startswith("number")
    assert types["dry_run"] == types["detect_unchanged"] == "boolean"
    assert all(types.values()), types


def test_the_site_browses_and_searches_from_the_disk():
    """Links to .html files (no folder URLs), and the search index as a script with a local
    iframe worker (Material's offline plugin would otherwise fetch that polyfill from the web)."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["use_directory_urls"] is False
    assert "offline" in config["plugins"] and "search" in config["plugins"]
    (polyfill,) = config["extra"]["polyfills"]
    assert "://" not in polyfill and "iframe-worker" in polyfill
    assert (DOCS / polyfill).read_text().count("IFrameWorker") == 1


# "issue 22", "issue #22", "#22" (not "issues 18 statements")
TRACKER = re.compile(r"\bissue\s+#?\d+|\bissues\s+#\d+|(?<![\w&/#])#\d+\b", re.I)


def test_no_user_facing_text_names_a_tracker_number():
    """Rounds and changes are named by date and subject: a user cannot look our tracker up."""
    pages = [README, ROOT / "BENCHMARKS.md", ROOT / "CHANGELOG.md", *DOCS.rglob("*.md")]
    found = [f"{p.relative_to(ROOT)}: {m}" for p in pages for m in TRACKER.findall(p.read_text())]
    # the package's messages: its Python, and its macros less their {# comments #}
    for path in (ROOT / "adapter" / "dbt_merge").rglob("*.py"):
        found += [f"{path.relative_to(ROOT)}: {m}" for m in TRACKER.findall(path.read_text())]
    for path in (ROOT / "macros").rglob("*.sql"):
        shown = re.sub(r"\{#.*?#\}", "", path.read_text(), flags=re.S)
        found += [f"{path.relative_to(ROOT)}: {m}" for m in TRACKER.findall(shown)]
    assert not found, found
