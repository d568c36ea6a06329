"""Rules of the package's layout that a review would otherwise have to remember.

- No Python code renders a private (underscore) macro: the Python doors talk to the flow through
  public macros only (run_merge, record_merge_history, merge_history_relation, ...), so a phase
  can change its private macros without breaking a door it cannot see.
- No macro file calls another file's private (underscore) macro, directly or through
  `adapter.dispatch`, and a private macro's adapter versions (`spark___x`) live in its file: a
  helper other files use is public (no underscore), so that what a file offers the others is
  what its names say, and a private macro can change with its file alone.
- The flow's decisions (whether the changes are materialized, whether the count tests the keys,
  ...) live in macros/plan/, with their engines' versions.
- Only the flow (macros/flow/run_merge.sql) and the plan's builder (build_merge_plan) change the
  plan: every other phase returns what it adds (the source check its measurements, the classify's
  choices), and the flow keeps it; a phase that needs the plan with a change of its own works on
  a copy. So what a phase reads is what the flow handed it. Checked in the text (a lint) and
  while merges run on DuckDB and a Parquet dataset (every macro watched: an alias, a plan under
  another name, a copy sharing the plan's dicts, the Parquet writer's Python).

Red team helper-91 found the first two text checks blind to a private macro taken as a value,
its adapter version called by name, and a dispatch of a name built from pieces; and the plan's
lint blind to aliases: the text check now looks for any use, and the run-time watch is added.
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


#: Jinja comments, where a macro's name is only mentioned
COMMENT = re.compile(r"\{#.*?#\}", re.S)


def test_no_macro_file_calls_another_files_private_macro():
    where = _macro_files()
    private = {name: files for name, files in where.items() if name.startswith("_")}
    found = [f"{name} is defined in {len(files)} files: "
             + ", ".join(sorted(str(f.relative_to(ROOT)) for f in files))
             for name, files in sorted(private.items()) if len(files) > 1]
    for path in sorted((ROOT / "macros").rglob("*.sql")):
        text = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text())
        # a dispatched name is written out: one built from pieces would hide the macro it calls
        for match in re.finditer(r"dispatch\(\s*(?!['\"]\w+['\"]\s*[,)])", text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path.relative_to(ROOT)}:{line} dispatches a name that is not a literal")
        for name, files in sorted(private.items()):
            if path in files:
                continue
            # called, taken as a value or dispatched, the macro or one of its adapter versions
            quoted = re.escape(name)
            use = re.compile(rf"(?<![\w.])(?:dbt_merge\.)?"
                             rf"(?:(?:default|spark|duckdb|clickhouse)__)?{quoted}(?!\w)")
            for match in use.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(ROOT)}:{line} uses {name} of "
                             f"{next(iter(files)).relative_to(ROOT)}: make it public (no "
                             "underscore) or keep the use in its file")
    assert not found, "\n".join(found)


#: the decisions the flow takes from the plan (each with its engines' versions), which live in
#: macros/plan/, one file each: a newcomer looking for why a run took one path finds them there
DECISIONS = ("materialize_changes", "inline_changes", "count_tests_keys", "commit_counts_applies",
             "every_source_row", "check_after_rebuild", "choose_full_merge_write")


def test_the_flows_decisions_live_in_plan():
    where = _macro_files()
    found = [f"{name}: {', '.join(sorted(str(f.relative_to(ROOT)) for f in where.get(name, ())))}"
             for name in DECISIONS
             if not where.get(name) or any(f.parent.name != "plan" for f in where[name])]
    assert not found, "decisions outside macros/plan/:\n" + "\n".join(found)


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


def _fingerprint(value) -> str:
    """The plan as text, every nested dict and list included (a copy's shared parts too)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k!r}:{_fingerprint(v)}"
                              for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_fingerprint(v) for v in value) + "]"
    return repr(value)


def test_no_phase_changes_the_plan_while_it_runs(monkeypatch, tmp_path):
    """What the static rule above cannot see (an alias, a plan under another name, a copy whose
    nested dicts are the plan's, the Parquet writer's Python): merges on DuckDB and a Parquet
    dataset with every macro the flow reaches watched; the plan is the same after each macro
    but the flow and its builder as before it."""
    import duckdb
    from dbt_merge import render
    from dbt_merge.duckdb.api import merge_table
    from dbt_merge.parquet import merge_parquet_dataset

    changed: list[str] = []
    get = render.MacroContext.get

    def watched(self, name):
        macro = get(self, name)

        def call(*args, **kwargs):
            plans = [a for a in (*args, *kwargs.values())
                     if isinstance(a, dict) and "key_columns" in a and "actions" in a]
            before = [_fingerprint(p) for p in plans]
            try:
                return macro(*args, **kwargs)
            finally:
                if name not in ("run_merge", "build_merge_plan"):
                    changed.extend(name for p, b in zip(plans, before, strict=True)
                                   if _fingerprint(p) != b)
        return call

    monkeypatch.setattr(render.MacroContext, "get", watched)
    con = duckdb.connect()
    con.execute("create table t as select range as id, 'a' || range as v, false as gone "
                "from range(10)")
    dataset = tmp_path / "ds"
    runs = [
        # the SELECT most of the table (every row listed), one integer key (its range measured)
        ("select range as id, 'b' || range as v, false as gone from range(2, 12)", "upsert", {}),
        ("select range as id, 'b' || range as v from range(0)", "upsert", {}),
        ("select * from (values (1, 'x', 1), (1, 'x', 1), (3, 'y', 2)) s(id, v, o)",
         "deduplicate", {"dedup_order_by": "o"}),
        ("select range as id, 'c' || range as v from range(5)", "full_merge",
         {"soft_delete_column": "gone", "max_delete_fraction": 1}),
    ]
    for select, strategy, options in runs:
        merge_table(con, con.sql(select), "t", "id", strategy, **options)
        merge_parquet_dataset(con.sql(select).project("id, v"), dataset, "id",
                              "deduplicate" if strategy == "deduplicate" else "upsert",
                              connection=con, durable=False,
                              **({"dedup_order_by": "v"} if strategy == "deduplicate" else {}))
    # history: a key closed, then back with a column the table did not have (history.writing)
    history = {"updated_at": "at", "hard_deletes": "invalidate"}
    for select, options in [
        ("select range as id, 'a' as v, timestamp '2024-01-01' as at from range(3)", history),
        ("select range as id, 'b' as v, timestamp '2024-01-02' as at from range(2)", history),
        ("select range as id, 'c' as v, timestamp '2024-01-03' as at, 1 as extra from range(3)",
         {"updated_at": "at", "hard_deletes": "new_record",
          "on_schema_change": "append_new_columns"}),
    ]:
        merge_table(con, con.sql(select), "h", "id", "history", **options)
        merge_parquet_dataset(con.sql(select), tmp_path / "hist", "id", "history",
                              connection=con, durable=False, **options)
    assert not changed, sorted(set(changed))
