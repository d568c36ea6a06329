"""Rules of the package's layout that a review would otherwise have to remember.

- No Python code renders a private (underscore) macro: the Python doors talk to the flow through
  public macros only (run_merge, record_merge_history, merge_history_relation, ...), so a phase
  can change its private macros without breaking a door it cannot see.
- No macro file calls another file's private (underscore) macro, directly or through
  `adapter.dispatch`, and a private macro's adapter versions (`spark___x`) live in its file: a
  helper other files use is public (no underscore), so that what a file offers the others is
  what its names say, and a private macro can change with its file alone.
- Only the flow (macros/flow/run_merge.sql) and the plan's builder (build_merge_plan) change the
  plan: every other phase returns what it adds (the source check its measurements, the classify's
  choices), and the flow keeps it; a phase that needs the plan with a change of its own works on
  a copy. So what a phase reads is what the flow handed it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = ROOT / "adapter" / "dbt_merge"
#: how Python reaches a macro: MacroContext.get("name") or an attribute of a MacroContext
PRIVATE_MACRO = re.compile(r"""\.get\(\s*["']_[a-z]\w*["']|\b(?:macros|m)\._[a-z]\w*\(""")


def test_no_python_code_renders_a_private_macro():
    found = [
        f"{path.relative_to(ADAPTER.parent)}:{n}: {line.strip()}"
        for path in sorted(ADAPTER.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if PRIVATE_MACRO.search(line) and "response.get" not in line
    ]
    assert not found, "\n".join(found)


MACRO_DEF = re.compile(r"\{%-?\s*macro\s+(\w+)\s*\(")
#: an adapter's version of a dispatched macro: `spark__x`, or `spark___x` for a private `_x`
ADAPTER_VERSION = re.compile(r"^(?:default|spark|duckdb|clickhouse)__(\w+)$")


def _macro_files() -> dict[str, set[Path]]:
    """Each macro's name (an adapter version by the name it is dispatched as) -> its files."""
    where: dict[str, set[Path]] = {}
    for path in sorted((ROOT / "macros").rglob("*.sql")):
        for name in MACRO_DEF.findall(path.read_text()):
            version = ADAPTER_VERSION.match(name)
            where.setdefault(version.group(1) if version else name, set()).add(path)
    return where


def test_no_macro_file_calls_another_files_private_macro():
    where = _macro_files()
    private = {name: files for name, files in where.items() if name.startswith("_")}
    found = [f"{name} is defined in {len(files)} files: "
             + ", ".join(sorted(str(f.relative_to(ROOT)) for f in files))
             for name, files in sorted(private.items()) if len(files) > 1]
    for path in sorted((ROOT / "macros").rglob("*.sql")):
        text = path.read_text()
        for name, files in sorted(private.items()):
            if path in files:
                continue
            quoted = re.escape(name)
            call = re.compile(rf"(?<![\w.])(?:dbt_merge\.)?{quoted}\s*\("
                              rf"|dispatch\(\s*['\"]{quoted}['\"]")
            for match in call.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(ROOT)}:{line} calls {name} of "
                             f"{next(iter(files)).relative_to(ROOT)}: make it public (no "
                             "underscore) or keep the call in its file")
    assert not found, "\n".join(found)


#: a change made in place to the plan or to a dict inside it
PLAN_CHANGE = re.compile(
    r"\bplan(?:\.\w+)*\.(?:update|append|extend|pop|setdefault|clear|insert)\(")
PLAN_WRITERS = ("macros/flow/run_merge.sql", "macros/plan/build_merge_plan.sql")


def test_only_the_flow_and_the_builder_change_the_plan():
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sorted((ROOT / "macros").rglob("*.sql"))
        if str(path.relative_to(ROOT)) not in PLAN_WRITERS
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if PLAN_CHANGE.search(line)
    ]
    assert not found, "\n".join(found)
