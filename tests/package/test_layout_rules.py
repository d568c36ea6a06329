"""Rules of the package's layout that a review would otherwise have to remember.

- No Python code renders a private (underscore) macro: the Python doors talk to the flow through
  public macros only (run_merge, record_merge_history, merge_history_relation, ...), so a phase
  can change its private macros without breaking a door it cannot see.
"""

from __future__ import annotations

import re
from pathlib import Path

ADAPTER = Path(__file__).resolve().parents[2] / "adapter" / "dbt_merge"
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
