"""The door contract of the Parquet dataset doors: merge_parquet_dataset (run_merge) and dbt
`location` models (issue 30, "a door contract suite that every door runs").

A dataset door names its target by a path, so the dimensions are paths:

- the path's form: absolute, relative (to the working directory), with a trailing slash,
  through `..`, a symlinked folder, under a symlinked parent, a pathlib.Path, `~/...` (the home
  folder); its last name plain, with a space, unicode, dots, `=`, a quote, `;`, `#`, `%20`, a
  glob character or a backslash;
- what is at the path: nothing, nothing and no parent folders, a dataset, an empty folder, a
  folder holding other files (notes, `_SUCCESS`), another tool's Parquet files with the same
  columns or with other columns, a file, a Delta table's folder;
- the caller's objects (Python door): no connection, a connection holding temporary tables and
  views, a registered Arrow table and a changed setting, the same with a transaction open, or
  with default_collation nocase (the values differ in case only: 'a' against 'A');
- a dry run or not; the strategy; the source as an Arrow table, a relation of the caller's
  connection or a Parquet file.

Expected: merged (or created) exactly at that path, with rows and statistics equal to the
reference model (tests/support/reference.py), symlinks left as they are and every other
file in place; or refused with a clear message, nothing under the path changed (and nothing
created next to it by a refusal made before the dataset is read), the caller's connection
exactly as it was; a dry run writes nothing anywhere.

The Python cases are drawn by hypothesis (derandomized: the same cases on every run); the dbt
cases are a fixed selection of the same dimensions run in one `dbt run` (each invocation costs
seconds). The case counts are asserted at the end of each test.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
from collections import Counter
from functools import cache
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dbt_helpers import run_dbt
from dbt_merge.parquet import ParquetMergeError, commit, run_merge
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from suite_summary import record_cases
from support.cases import _without_local_constants
from support.harness import PROFILES_DIR, make_project, model_sql
from support.reference import MergeError, Options, canonical, merge

NAMES = [
    "plain",
    "with space",
    "ünïcödé",
    "dots.in.name",
    "..dots",
    "a=b",
    "quote'd",
    "semi;colon",
    "hash#1",
    "percent%20",
    "glob[1]",
    "star*",
    "back\\slash",
]
FORMS = [
    "absolute",
    "relative",
    "trailing slash",
    "dotdot",
    "symlinked folder",
    "symlinked parent",
    "pathlib",
    "home",
]
STATES = [
    "nothing",
    "missing parent",
    "dataset",
    "empty folder",
    "other files",
    "same columns",
    "other columns",
    "a file",
    "delta table",
]
CALLERS = ["private", "connection", "open transaction", "nocase connection"]
SOURCES = ["arrow", "relation", "parquet file"]
STRATEGIES = ["upsert", "insert", "update", "full_merge", "deduplicate"]
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
ROUNDS = 2  # each (path form, what is at the path) pair this many times

#: a refusal's message (excerpt), by its cause; `early` refusals come before the dataset is
#: read, and leave nothing next to it either
REFUSALS = {
    "glob": "has a glob character",
    "backslash": "has a backslash, which DuckDB's glob reads as an escape",
    "a file": "is a file, not a folder",
    "delta table": "is a Delta table (its marker: ",
    "open transaction": "the connection has a transaction open",
    # 'key column' from Python, 'unique_key column' from dbt
    "other columns": "column 'id' is not in the target",
}


def rows_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


@st.composite
def values(draw):
    """What hypothesis draws for a case: the rows already at the path, the source's rows (keys
    unique: the contract is about the path, the reference suites cover bad rows), the strategy
    and the kind of source."""
    existing_keys = draw(st.lists(st.integers(0, 7), unique=True, max_size=6))
    source_keys = draw(st.lists(st.integers(0, 9), unique=True, max_size=6))
    value = st.sampled_from(["a", "b", "c", "A", "B"])
    return {
        "strategy": draw(st.sampled_from(STRATEGIES)),
        "source": draw(st.sampled_from(SOURCES)),
        "existing": [{"id": k, "v": draw(value)} for k in existing_keys],
        "rows": [{"id": k, "v": draw(value)} for k in source_keys],
    }


@cache
def drawn_values(n: int) -> tuple[dict, ...]:
    """n draws of values(), the same on every run (derandomized, without the constants of the
    modules loaded, as support.cases draws)."""
    drawn: list[dict] = []

    @settings(
        max_examples=2 * n,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(values())
    def collect(v: dict) -> None:
        drawn.append(v)

    with _without_local_constants():
        collect()
    assert len(drawn) >= n, len(drawn)
    return tuple(drawn[:n])


def python_cases() -> list[dict]:
    """Every (path form, what is at the path) pair, twice; the name, the caller and dry_run
    cycled over them so that every state and form meets every caller and both kinds of run;
    the values drawn."""
    design = []
    for r in range(ROUNDS):
        for i, (form, state) in enumerate(itertools.product(FORMS, STATES)):
            design.append(
                {
                    "name": NAMES[(5 * i + 7 * r) % len(NAMES)],
                    "form": form,
                    "state": state,
                    "caller": CALLERS[(i + r) % len(CALLERS)],
                    "dry_run": (i + 2 * r) % 5 == 2,
                }
            )
    cases = []
    for structure, drawn in zip(design, drawn_values(len(design)), strict=True):
        case = {**structure, **drawn}
        if case["caller"] == "private" and case["source"] == "relation":
            case["source"] = "arrow"  # a relation needs the caller's connection
        cases.append(case)
    return cases


# ---------------------------------------------------------------- building a case on disk


def real_path(base: Path, case: dict) -> Path:
    """Where the dataset really is (what every form of the path resolves to)."""
    parent = (
        base / "data" / "missing" / "deeper" if case["state"] == "missing parent" else base / "data"
    )
    return parent / case["name"]


def lay_out(base: Path, case: dict, real: Path) -> None:
    """What is at the path before the merge, as other tools (or an earlier merge) left it."""
    (base / "data" / "x").mkdir(parents=True)
    state = case["state"]
    if state == "dataset":
        # built by an earlier merge (in a folder without a glob character, then renamed)
        built = base / "data" / "built"
        run_merge(rows_table(case["existing"]), built, "id", rows_per_file=3, durable=False)
        built.rename(real)
    elif state in ("empty folder", "other files", "same columns", "other columns"):
        real.mkdir()
    if state == "other files":
        (real / "notes.txt").write_text("keep me")
        (real / "_SUCCESS").write_text("")
    if state == "same columns":
        pq.write_table(rows_table(case["existing"]), real / "part-0.parquet")
    if state == "other columns":
        pq.write_table(pa.table({"a": [1], "b": ["x"]}), real / "theirs.parquet")
    if state == "a file":
        real.write_text("not a folder")
    if state == "delta table":
        (real / "_delta_log").mkdir(parents=True)
        pq.write_table(rows_table(case["existing"]), real / "part-0.parquet")


def target_path(base: Path, case: dict, real: Path):
    """The path as the caller spells it (relative: to `base`, the working directory)."""
    form = case["form"]
    if form == "absolute":
        return str(real)
    if form == "relative":
        return os.path.relpath(real, base)
    if form == "trailing slash":
        return str(real) + "/"
    if form == "dotdot":
        return str(base / "data" / "x" / ".." / real.relative_to(base / "data"))
    if form == "symlinked folder":
        os.symlink(real, base / "link")
        return str(base / "link")
    if form == "symlinked parent":
        os.symlink(real.parent, base / "plink")
        return str(base / "plink" / case["name"])
    if form == "home":  # $HOME is `base` (home_directory)
        return "~/" + os.path.relpath(real, base)
    return real  # pathlib


def snapshot(base: Path) -> dict[str, tuple]:
    """Every entry under base (not following symlinks): kind, inode, size, mtime, link target."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(base):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            st_ = os.lstat(path)
            link = os.readlink(path) if os.path.islink(path) else None
            size = 0 if os.path.isdir(path) and not link else st_.st_size
            found[os.path.relpath(path, base)] = (st_.st_mode >> 12, st_.st_ino, size, link)
    return found


def read_rows(path) -> list[dict]:
    con = duckdb.connect()
    pattern = str(Path(path) / "**" / "*.parquet").replace("'", "''")
    cur = con.execute(f"select * from read_parquet('{pattern}', union_by_name = true)")
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    con.close()
    return rows


def caller_connection(case: dict, source: pa.Table, real: Path):
    """A caller's connection with objects of its own: a temporary table and view, a registered
    Arrow table, a changed setting, a relation over its own table, a temporary view named as
    the dataset's folder (the name the merge gives its view of the dataset's files, in
    messages); with a transaction open holding an uncommitted row, for that caller."""
    con = duckdb.connect()
    quoted = '"' + str(real.resolve()).replace('"', '""') + '"'
    con.execute(f"create temp view {quoted} as select 42 as answer")
    con.execute("set TimeZone = 'Asia/Kolkata'")
    con.execute("create table kept (x int)")
    con.execute("create temp table mine as select 1 as x")
    con.execute("create temp view mine_view as select x + 1 as y from mine")
    con.register("my_arrow", pa.table({"z": [1, 2]}))
    con.register("src_arrow", source)
    con.execute("create temp table src as select * from src_arrow")
    con.unregister("src_arrow")
    if case["caller"] == "open transaction":
        con.begin()
        con.execute("insert into kept values (7)")
    if case["caller"] == "nocase connection":
        con.execute("set default_collation = 'nocase'")
    return con


def connection_state(con) -> list:
    tables = con.execute(
        "select database_name, schema_name, table_name from duckdb_tables() order by all"
    ).fetchall()
    contents = [con.execute(f'select * from "{d}"."{s}"."{t}" order by all').fetchall()
                for d, s, t in tables]  # fmt: skip
    views = con.execute(
        "select view_name, sql from duckdb_views() where not internal order by all"
    ).fetchall()
    settings_ = con.execute("select name, value from duckdb_settings() order by all").fetchall()
    registered = con.execute("select sum(z) from my_arrow").fetchall()
    return [tables, contents, views, settings_, registered]


def expectation(case: dict):
    """('refused', cause) or ('merged', rows, stats) by the reference model."""
    if any(ch in case["name"] for ch in "*?[{"):
        return ("refused", "glob")
    if "\\" in case["name"]:
        return ("refused", "backslash")
    if case["state"] == "a file":
        return ("refused", "a file")
    if case["state"] == "delta table":
        return ("refused", "delta table")
    if case["caller"] == "open transaction":
        return ("refused", "open transaction")
    if case["state"] == "other columns":
        return ("refused", "other columns")
    existing = case["existing"] if case["state"] in ("dataset", "same columns") else None
    opts = Options(max_delete_fraction=1)
    try:
        rows, stats = merge(case["strategy"], case["rows"], existing, ["id"], opts)
    except MergeError as e:  # pragma: no cover - the drawn sources have unique keys
        raise AssertionError(f"the reference refused a contract case: {e}") from e
    return ("merged", rows, stats)


# ---------------------------------------------------------------- the Python door

SEEN: Counter = Counter()
FAILURES: list[str] = []
DIMENSIONS: Counter = Counter()


@contextlib.contextmanager
def working_directory(path: Path):
    """`path` as the working directory and as $HOME (the `home` form's `~`); caches stay where
    they were (XDG_CACHE_HOME)."""
    saved = {k: os.environ.get(k) for k in ("HOME", "XDG_CACHE_HOME")}
    before = os.getcwd()
    os.environ.setdefault("XDG_CACHE_HOME", str(Path.home() / ".cache"))
    os.chdir(path)
    os.environ["HOME"] = str(path)
    try:
        yield
    finally:
        os.chdir(before)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def python_case(case: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp, working_directory(Path(tmp)):
        base = Path(tmp)
        real = real_path(base, case)
        lay_out(base, case, real)
        target = target_path(base, case, real)
        source_table = rows_table(case["rows"])
        con = None
        if case["caller"] != "private":
            con = caller_connection(case, source_table, real)
        source = {"arrow": source_table}.get(case["source"])
        if case["source"] == "relation":
            source = con.table("src")
        if case["source"] == "parquet file":
            pq.write_table(source_table, base / "source.parquet")
            source = str(base / "source.parquet")
        state = connection_state(con) if con is not None else None
        before = snapshot(base)
        outcome = expectation(case)
        SEEN[(outcome[0], case["dry_run"])] += 1
        for dimension in ("form", "state", "caller", "source"):
            DIMENSIONS[(dimension, case[dimension])] += 1
        args = {
            "strategy": case["strategy"],
            "max_delete_fraction": 1,
            "dry_run": case["dry_run"],
            "connection": con,
            "durable": False,
        }
        label = repr(case)
        if outcome[0] == "refused":
            with pytest.raises(ParquetMergeError) as err:
                run_merge(source, target, "id", **args)
            message = str(err.value)
            assert REFUSALS[outcome[1]] in message, (label, message)
            assert message.startswith(f"dbt_merge: dataset '{target}': "), (label, message)
            after = snapshot(base)
            if outcome[1] == "other columns" and not case["dry_run"]:
                # refused while reading the dataset, under its lock: the work folder (the
                # lock) stays next to it, empty of work files
                work = os.path.relpath(commit.work_dir(real), base)
                assert [p for p in after if p.startswith(work + os.sep)] == [
                    os.path.join(work, "lock")
                ], label
                after = {
                    p: v for p, v in after.items() if p != work and not p.startswith(work + os.sep)
                }
            assert after == before, label
        else:
            _, rows, stats = outcome
            report = run_merge(source, target, "id", **args)
            expected_stats = stats.as_dict()
            if case["dry_run"]:
                expected_stats["dry_run"] = True
            assert report.stats == expected_stats, label
            after = snapshot(base)
            if case["dry_run"]:
                assert after == before, label
            else:
                assert canonical(read_rows(target), ["id", "v"]) == canonical(rows, ["id", "v"]), (
                    label
                )
                assert report.root == str(real.resolve()), label
                # nothing else changed: entries outside the dataset and its work folder
                inside = [
                    os.path.relpath(real, base),
                    os.path.relpath(commit.work_dir(real), base),
                ]
                parents = {os.path.relpath(p, base) for p in real.parents if base in p.parents}

                def outside(snap):
                    return {
                        p: v
                        for p, v in snap.items()
                        if p not in parents
                        and not any(p == i or p.startswith(i + os.sep) for i in inside)
                    }

                assert outside(after) == outside(before), label
                if case["state"] == "other files":
                    assert (real / "notes.txt").read_text() == "keep me", label
                    assert (real / "_SUCCESS").exists(), label
        if con is not None:
            assert connection_state(con) == state, label
            if case["caller"] == "open transaction":
                assert con.execute("select * from kept").fetchall() == [(7,)], label
                con.rollback()
                assert con.execute("select * from kept").fetchall() == [], label
            con.close()


def test_merge_parquet_dataset_contract():
    SEEN.clear()
    FAILURES.clear()
    DIMENSIONS.clear()
    for case in python_cases():
        try:
            python_case(case)
        except (Exception, pytest.fail.Exception) as e:  # noqa: BLE001 - one case must not hide others
            FAILURES.append(f"{case!r}\n{type(e).__name__}: {str(e)[:1500]}")
    record_cases(sum(SEEN.values()), len(FAILURES))
    print(f"merge_parquet_dataset contract: {sum(SEEN.values())} cases {dict(SEEN)}")
    print(f"  by dimension: {dict(DIMENSIONS)}")
    assert not FAILURES, f"{len(FAILURES)} failures:\n\n" + "\n\n".join(FAILURES[:10])
    # the mix the generator must give (guards it)
    assert SEEN[("merged", False)] >= 30 and SEEN[("refused", False)] >= 15, SEEN
    assert SEEN[("merged", True)] >= 10 and SEEN[("refused", True)] >= 5, SEEN
    for dimension, values in (("form", FORMS), ("state", STATES), ("caller", CALLERS)):
        assert all(DIMENSIONS[(dimension, v)] >= 3 for v in values), (dimension, DIMENSIONS)


# ---------------------------------------------------------------- the dbt door (location)


def dbt_cases() -> list[dict]:
    """Each state with two path forms and two names (cycled), five of them dry runs; a glob
    character is refused before the hooks (test_dbt.py), so it is not repeated here."""
    names = [n for n in NAMES if not any(ch in n for ch in "*?[{")]
    forms = [f for f in FORMS if f != "pathlib"]
    cases = []
    for i, state in enumerate(STATES):
        for j in range(2):
            k = 2 * i + j
            cases.append(
                {
                    "model": f"contract_{k:02d}",
                    "name": names[k % len(names)],
                    "form": forms[k % len(forms)],
                    "state": state,
                    "caller": "dbt",
                    "dry_run": k % 3 == 2,
                    "strategy": STRATEGIES[k % len(STRATEGIES)],
                    "existing": [{"id": n, "v": "a"} for n in range(k % 4)],
                    "rows": [{"id": n, "v": "b" if n % 2 else "a"} for n in range(1, 4)],
                }
            )
    return cases


def test_location_model_contract(tmp_path, monkeypatch):
    con = duckdb.connect(os.environ["DBT_MERGE_DUCKDB_PATH"])
    con.execute("create schema if not exists pq_contract_src")
    cases = dbt_cases()
    models = {}
    for case in cases:
        base = tmp_path / case["model"]
        real = real_path(base, case)
        lay_out(base, case, real)
        case["base"], case["real"] = base, real
        with working_directory(tmp_path):  # relative locations: to where dbt runs
            location = target_path(base, case, real)
            if case["form"] in ("relative", "home"):  # to where dbt runs, and its $HOME
                location = os.path.relpath(real, tmp_path)
                location = "~/" + location if case["form"] == "home" else location
        table = f"pq_contract_src.{case['model']}"
        con.execute(f"create or replace table {table} (id bigint, v varchar)")
        con.executemany(
            f"insert into {table} values (?, ?)", [[r["id"], r["v"]] for r in case["rows"]]
        )
        cfg = {
            "unique_key": "id",
            "strategy": case["strategy"],
            "location": str(location),
            "schema": "pq_contract",
            "max_delete_fraction": 1,
            "dry_run": case["dry_run"],
        }
        models[case["model"]] = model_sql(cfg, f"select * from {table}")
        case["before"] = snapshot(base)
    con.close()
    proj = make_project(tmp_path / "proj", "parquet_contract", models)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    run = run_dbt(["run", "--threads", "4"], proj, "duckdb", PROFILES_DIR)
    counts: Counter = Counter()
    for case in cases:
        outcome = expectation(case)
        counts[(outcome[0], case["dry_run"])] += 1
        label = {k: v for k, v in case.items() if k not in ("before", "base", "real")}
        after = snapshot(case["base"])
        if outcome[0] == "refused":
            message = run.error(case["model"])
            assert REFUSALS[outcome[1]] in message, (label, message)
            real = case["real"]
            work = os.path.relpath(commit.work_dir(real), case["base"])
            after = {
                p: v for p, v in after.items() if p != work and not p.startswith(work + os.sep)
            }
            assert after == case["before"], label
            continue
        _, rows, stats = outcome
        assert run.stats(case["model"]) == stats.as_dict(), label
        if case["dry_run"]:
            assert "DRY RUN" in run.result(case["model"]).adapter_response["_message"], label
            assert after == case["before"], label
        else:
            got = read_rows(case["real"])
            assert canonical(got, ["id", "v"]) == canonical(rows, ["id", "v"]), label
            for link in ("link", "plink"):
                if (case["base"] / link).exists():
                    assert (case["base"] / link).is_symlink(), label
    record_cases(len(cases), 0)
    print(f"location contract: {len(cases)} cases {dict(counts)}")
    assert counts[("refused", False)] + counts[("refused", True)] >= 4, counts
