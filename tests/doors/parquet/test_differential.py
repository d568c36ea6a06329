"""The reference-model differential suite, run against merge_parquet_dataset.

The generated cases of tests/support/cases.py (the same fixed-seed hypothesis draws the dbt suite
runs: composite keys of mixed types, NULLs, duplicate keys in the source and in the target,
empty and missing targets, NaN, unicode, odd and reserved column names, a target typed
differently from the source, full_merge's max_delete_fraction) each become a dataset on disk
and a source, merged three ways:

1. the increment: rows and the five statistics must equal the reference model's, or the error
   one of its kinds names, with every file of the dataset untouched;
2. the same increment again: 0 inserted, updated, deleted, and no file rewritten;
3. every 4th case, full_refresh: the dataset rebuilt from the checked, deduplicated source.

Variations per case (by its index): the target written as 1-3 files or as a hive-partitioned
dataset (partitioned by a key column or by a value column), the source given as an Arrow
table, a Parquet file or a DuckDB relation, and the merge on a private connection or on one
connection shared by many merges.

What the Python API does not have is left out of the cases: incremental_predicates (and
on_key_outside_predicates) are dropped and the expectation recomputed without them; dbt-only
aspects (run modes, threads, contracts, twin schemas) are ignored. Cases the reference cannot
predict exactly (a random() SELECT) and config values naming a column with a leading or
trailing space (see _config_names_padded) are skipped. A NOCASE column is a plain string in
the files (Parquet has no collations); the SELECT's, on the shared connection, keeps its
collation, and that connection's default_collation is nocase: text is judged byte for byte.

A second generated family (stored_cases.py, issue 21) varies what the first does not: column
types a Parquet file stores differently (HUGEINT, INTERVAL, TIME WITH TIME ZONE spelled at
several offsets, fixed-size arrays), a key named like a nested field's printed path (`x, y`
beside struct x), and datasets written by pyarrow whose files disagree in schema (an older file
without a later column, a narrower type, a conflicting type), each checked against the
reference model on the values the files store, then merged again (nothing may change), or
refused with the package's message and the dataset untouched.
"""

from __future__ import annotations

import dataclasses
import re
import traceback
from functools import cache
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dbt_merge.parquet import ParquetMergeError, run_merge
from dbt_merge.parquet.api import _api_wording
from suite_summary import record_cases
from support.cases import (
    ERROR_EXCERPTS,
    STRATEGY_NAMES,
    Case,
    generate_cases,
    with_collations,
    with_conditions,
    with_dry_run,
    with_soft_delete,
)
from support.coltypes import engine_type
from support.harness import PROCESSES, process_pool
from support.reference import MergeError, Options, canonical, merge, update_columns

from . import stored_cases as stored
from .datasets import fingerprint, read_dataset

PER_STRATEGY = {"upsert": 80, "insert": 55, "update": 60, "full_merge": 80, "deduplicate": 85}
PARTITIONABLE = {"int", "int32", "str", "date", "bool"}
PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@cache
def shared_connection() -> duckdb.DuckDBPyConnection:
    """The connection every other case merges on: its default_collation is nocase, as a
    caller's may be; the merge judges keys, statistics and changes byte for byte anyway."""
    con = duckdb.connect()
    con.execute("set default_collation = 'nocase'")
    return con


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@cache
def generated_cases() -> tuple[Case, ...]:
    """The generated cases the Parquet path can run, with their options as drawn."""
    cases: list[Case] = []
    for strategy in STRATEGY_NAMES:
        for case in generate_cases(strategy, PER_STRATEGY[strategy]):
            if case.nondet:
                continue
            if _config_names_padded(case):
                continue
            cases.append(case)
    return tuple(cases)


@cache
def all_cases() -> tuple[Case, ...]:
    """The first family: without incremental_predicates (the options family has them)."""
    return tuple(
        dataclasses.replace(
            case, opts=dataclasses.replace(case.opts, predicate=None, on_key_outside=None)
        )
        for case in generated_cases()
    )


@cache
def option_cases() -> tuple[Case, ...]:
    """The options a dataset takes since issue 23 item 3, on copies of the generated cases, as
    the table suites add them: every 2nd case drawn with incremental_predicates (and
    on_key_outside_predicates), as drawn; merge_update_condition / delete_condition on every
    3rd (with_conditions); soft_delete_column on those that can take it (with_soft_delete, of
    the plain cases and of the condition ones); dry_run on every 8th (with_dry_run)."""
    cases = generated_cases()
    picked: list[Case] = [c for c in cases if c.opts.predicate is not None][::2]
    conditions = [c for c in map(with_conditions, cases[::3]) if c is not None]
    picked += conditions
    soft = [with_soft_delete(c) for c in (*cases[1::4], *conditions[::2])]
    picked += [c for c in soft if c is not None]
    picked += [c for c in map(with_dry_run, cases[2::8]) if c is not None]
    return tuple(picked)


def _config_names_padded(case: Case) -> bool:
    """A key, ordering or update column named with a leading or trailing space: the package
    trims config values (as_list), so it cannot be named there, and the reference does not
    model that."""
    opts = case.opts
    named = [*case.key, *(t.column for t in opts.dedup_order_by)]
    named += [*(opts.update_columns or []), *opts.exclude_columns]
    return any(n != n.strip() for n in named)


def expected(case: Case, rebuild: bool):
    """(rows, stats, column types) or a MergeError, as the reference merges the case."""
    types = {c.name: (c.source, c.target) for c in case.columns}
    try:
        if rebuild or case.target is None:
            rows, stats = merge(case.strategy, case.source, None, case.key, case.opts)
            return rows, stats, dict(case.source_columns)
        rows, stats = merge(
            case.strategy, case.source, case.target, case.key, case.opts, types=types
        )
        return rows, stats, dict(case.target_columns)
    except MergeError as e:
        return e


def partitioning(index: int, case: Case) -> list[str] | None:
    if case.target == []:
        return None  # an empty hive dataset has no files to carry its schema
    usable = [
        c.name
        for c in case.columns
        if _in_files(c.source) == _in_files(c.target) in PARTITIONABLE and PLAIN.fullmatch(c.name)
    ]
    if index % 4 == 1 or index % 8 == 2:
        return [case.key[0]] if case.key[0] in usable else None
    if index % 4 == 3:
        values = [n for n in usable if n not in case.key]
        return values[:1] or None
    return None


def _in_files(typ: str) -> str:
    """A column's type as the dataset's files hold it: a NOCASE column is a plain string."""
    return "str" if typ == "nocase" else typ


def create_table(con, name: str, columns: list[tuple[str, str]], rows: list[dict]) -> None:
    cols = ", ".join(f"{quote(c)} {engine_type(t, 'duckdb')}" for c, t in columns)
    con.execute(f"create or replace table {name} ({cols})")
    if rows:
        marks = ", ".join("?" for _ in columns)
        con.executemany(
            f"insert into {name} values ({marks})", [[r[c] for c, _ in columns] for r in rows]
        )


def write_target(root: Path, case: Case, parts: int, partition_by: list[str] | None) -> None:
    """The dataset as a tool would leave it: DuckDB's COPY, 1-3 files or hive partitions."""
    con = duckdb.connect()
    create_table(con, "target", case.target_columns, case.target)
    root.mkdir(parents=True)
    if partition_by:
        by = ", ".join(quote(p) for p in partition_by)
        con.execute(f"copy target to '{root}' (format parquet, partition_by ({by}))")
    else:
        n = max(1, min(parts, len(case.target)))
        size = -(-len(case.target) // n) if case.target else 1
        for i in range(n):
            con.execute(
                f"copy (select * from target limit {size} offset {i * size})"
                f" to '{root / f'part-{i}.parquet'}' (format parquet)"
            )
    con.close()


def run_case(index: int, case: Case, tmp: Path) -> list[str]:
    root = tmp / f"ds_{case.id}"
    parts = partitioning(index, case)
    hive_types = None
    if parts:
        hive_types = {
            p: engine_type(_in_files(dict(case.target_columns)[p]), "duckdb") for p in parts
        }
    if case.target is not None:
        write_target(root, case, 1 + index % 3, parts)
    con = shared_connection() if index % 2 else duckdb.connect()
    if case.collation is not None:  # the caller's connection, with its default_collation
        con = duckdb.connect()
        con.execute(f"set default_collation = '{case.collation}'")
    create_table(con, f"src_{case.id}", case.source_columns, case.source)
    source = con.table(f"src_{case.id}")
    if index % 2 == 0 and case.collation is None:
        # an Arrow table, merged on a private connection
        source = con.sql(f"select * from src_{case.id}").to_arrow_table()
        if index % 3 == 2:
            path = tmp / f"src_{case.id}.parquet"
            con.execute(f"copy src_{case.id} to '{path}' (format parquet)")
            source = str(path)
    cfg = case.config(quote)
    args = {
        "key_columns": cfg["unique_key"],
        "strategy": case.strategy,
        "dedup_order_by": cfg.get("dedup_order_by"),
        "merge_update_columns": cfg.get("merge_update_columns"),
        "merge_exclude_columns": cfg.get("merge_exclude_columns"),
        "merge_check_columns": cfg.get("merge_check_columns"),
        "detect_unchanged": cfg.get("detect_unchanged", True),
        "partition_by": parts,
        "rows_per_file": 3,
        "durable": False,
    }
    if case.opts.max_delete_fraction is not None:
        args["max_delete_fraction"] = case.opts.max_delete_fraction
    for option in (
        "incremental_predicates",
        "on_key_outside_predicates",
        "merge_update_condition",
        "delete_condition",
        "soft_delete_column",
        "dry_run",
    ):
        if option in cfg:
            args[option] = cfg[option]
    if index % 2 or case.collation is not None:
        args["connection"] = con
    where = f"[{case.id} partition_by={parts}] {case!r}\n"

    def check_rows(rows: list[dict], types: dict[str, str], label: str) -> None:
        names, got = read_dataset(root, hive_types)
        assert sorted(names) == sorted(case.names), f"{label}: columns {names}"
        assert canonical(got, case.names) == canonical(rows, case.names), (
            f"{label}: rows differ:\n got {sorted(map(repr, got))}\n ref {sorted(map(repr, rows))}"
        )

    def check_refused(error: MergeError, label: str, call) -> None:
        before = fingerprint(root)
        with pytest.raises(ParquetMergeError) as err:
            call()
        message = str(err.value)
        excerpts = [_api_wording(ERROR_EXCERPTS[k]) for k in error.kinds]
        assert any(e in message for e in excerpts), (
            f"{label}: expected {error.kinds} ({excerpts}), got: {message}"
        )
        assert fingerprint(root) == before, f"{label}: a refused merge changed the dataset"
        assert not list(root.parent.glob(f".{root.name}.dbt_merge/tx-*")), "work files left"

    failures = []
    try:
        outcome = expected(case, rebuild=False)
        if isinstance(outcome, MergeError):
            check_refused(outcome, "merge", lambda: run_merge(source, root, **args))
            return failures
        rows, stats, types = outcome
        before = fingerprint(root)
        report = run_merge(source, root, **args)
        five = {k: report.stats[k] for k in stats.as_dict()}
        assert five == stats.as_dict(), f"stats {report.stats} != reference {stats}"
        if case.opts.update_condition is not None and case.target is not None:
            assert report.stats["held_back"] == stats.held_back, f"held back {report.stats}"
        else:
            assert "held_back" not in report.stats, report.stats
        if case.dry_run:
            assert report.stats["dry_run"] is True, report.stats
            assert fingerprint(root) == before, "a dry run changed the dataset"
            assert case.target is not None or not list(root.glob("**/*.parquet"))
            return failures
        check_rows(rows, types, "merge")
        if case.target is not None and not (stats.updated or stats.deleted):
            # only inserts (or nothing): no existing file may be rewritten
            assert set(before) <= set(fingerprint(root)), "a file was rewritten without a change"
        if case.opts.predicate is not None:
            # a second run is not idempotent with predicates: a row inserted outside them is
            # a key the dataset holds only outside them (refused, or inserted again)
            return failures
        after = fingerprint(root)
        again = run_merge(source, root, **args)
        assert again.stats["total"] == stats.total, f"second run total {again.stats}"
        upd = update_columns(case.names, case.key, case.opts)
        never_updated = set(case.opts.check_columns or []) - set(upd)
        if case.opts.detect_unchanged is False or never_updated:
            # every matched row counts as updated and is rewritten, with the same values (or a
            # check column that is never updated differs again on every run)
            assert (again.stats["inserted"], again.stats["deleted"]) == (0, 0), again.stats
            check_rows(rows, types, "second run")
        else:
            changed = (again.stats["inserted"], again.stats["updated"], again.stats["deleted"])
            assert changed == (0, 0, 0), f"second run changed rows: {again.stats}"
            assert fingerprint(root) == after, "second run rewrote files"
        if index % 4 == 0:
            refreshed = expected(case, rebuild=True)
            if isinstance(refreshed, MergeError):
                check_refused(
                    refreshed,
                    "full refresh",
                    lambda: run_merge(source, root, **args, full_refresh=True),
                )
            else:
                rows, stats, types = refreshed
                report = run_merge(source, root, **args, full_refresh=True)
                assert report.stats == stats.as_dict(), f"full refresh stats {report.stats}"
                check_rows(rows, types, "full refresh")
    except Exception as e:  # noqa: BLE001 - one case's crash must not hide the others
        failures.append(where + _describe(e))
    return failures


def _describe(e: Exception) -> str:
    if isinstance(e, AssertionError):
        return str(e)
    return "".join(traceback.format_exception(e)[-3:])


def test_case_mix():
    """What the Parquet runs cover (guards the selection above)."""
    cases = all_cases()
    assert len(cases) >= 300
    outcomes = [expected(c, rebuild=False) for c in cases]
    kinds = {k for o in outcomes if isinstance(o, MergeError) for k in o.kinds}
    assert {
        "null_key",
        "duplicate_key",
        "dedup_tie",
        "target_duplicate_key",
        "mass_delete",
    } <= kinds
    assert sum(any(c.source != c.target for c in case.columns) for case in cases) >= 40
    parts = [partitioning(i, c) for i, c in enumerate(cases)]
    assert sum(p is not None and p[0] in c.key for p, c in zip(parts, cases, strict=True)) >= 20
    assert sum(p is not None and p[0] not in c.key for p, c in zip(parts, cases, strict=True)) >= 20


@pytest.fixture(scope="module")
def processes():
    """The processes side by side that run_family shares its cases out to (the families took
    ~80 s of CI's run in one), kept for the module's tests (each starts Python and imports the
    package once); each merges on its own shared_connection()."""
    with process_pool() as pool:
        yield pool


def run_cases(items: list[tuple[int, Case]], tmp: Path) -> list[list[str]]:
    """run_case for each (index, case), in one of the spawned processes."""
    return [run_case(index, case, tmp) for index, case in items]


def run_family(strategy: str, family: tuple[Case, ...], tmp_path: Path, processes) -> None:
    items = [(index, case) for index, case in enumerate(family) if case.strategy == strategy]
    n = 4 * PROCESSES  # a few shares a process: what a case costs varies
    shares = [processes.submit(run_cases, items[k::n], tmp_path) for k in range(n)]
    found = [failures for share in shares for failures in share.result()]
    record_cases(len(found), sum(map(bool, found)))
    failures = [failure for failures in found for failure in failures]
    assert not failures, f"{len(failures)} failures:\n\n" + "\n\n".join(failures[:8])


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_parquet_matches_reference(strategy, tmp_path, processes):
    run_family(strategy, all_cases(), tmp_path, processes)


def test_option_case_mix():
    """What the options family covers (guards option_cases)."""
    cases = option_cases()
    assert sum(c.opts.predicate is not None for c in cases) >= 30
    assert sum(c.opts.on_key_outside == "insert" for c in cases) >= 5
    assert sum(c.opts.update_condition is not None for c in cases) >= 20
    assert sum(c.opts.delete_condition is not None for c in cases) >= 20
    assert sum(c.opts.soft_delete is not None for c in cases) >= 20
    assert sum(c.dry_run for c in cases) >= 15
    outcomes = [expected(c, rebuild=False) for c in cases]
    kinds = {k for o in outcomes if isinstance(o, MergeError) for k in o.kinds}
    assert "key_outside_predicates" in kinds or "outside_predicates" in kinds, kinds


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_parquet_options_match_reference(strategy, tmp_path, processes):
    """incremental_predicates, the conditions, soft deletes and dry runs through
    merge_parquet_dataset, against the reference model (each refused before issue 23 item 3:
    every case of this family failed on the old code)."""
    run_family(strategy, option_cases(), tmp_path, processes)


@cache
def collation_cases() -> tuple[Case, ...]:
    """Every 2nd generated case with a text column, its SELECT's text differing from the
    dataset's by case or accent only (with_collations), merged on a connection whose
    default_collation is nocase or noaccent (the `column` variant's NOCASE is a plain string
    in the files)."""
    found = [with_collations(c) for c in generated_cases()]
    return tuple(c for c in found if c is not None and c.collation is not None)[::2]


def test_collation_case_mix():
    cases = collation_cases()
    assert sum(c.collation == "nocase" for c in cases) >= 8, len(cases)
    assert sum(c.collation == "noaccent" for c in cases) >= 8, len(cases)
    outcomes = [expected(c, rebuild=False) for c in cases]
    assert sum(not isinstance(o, MergeError) for o in outcomes) >= 10


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_parquet_collations_match_reference(strategy, tmp_path, processes):
    """Keys, the statistics pruning and changes judged byte for byte on a connection that
    would compare text ignoring case or accents (issue 35: the pruning skipped the file
    holding a key, which was inserted again, and case-only corrections counted unchanged)."""
    run_family(strategy, collation_cases(), tmp_path, processes)


# ---------------------------------------------------------------- issue 21's dimensions

STORED_CASES = 120


@cache
def stored_cases() -> tuple[stored.StoredCase, ...]:
    return tuple(stored.generate(STORED_CASES))


def _select(case: stored.StoredCase, rows: list[dict], offsets: dict[int, int] | None) -> str:
    """The SELECT of `rows` (seeds) in the source's own types; offsets: TIMETZ spellings."""
    parts = []
    for i, r in enumerate(rows):
        values = []
        for name, kind in case.columns:
            offset = (offsets or {}).get(i, 0)
            values.append(f"{stored.literal(kind, r[name], offset)} as {quote(name)}")
        parts.append("select " + ", ".join(values))
    if case.bad:
        first = dict(rows[0]) if rows else None
        values = []
        for name, kind in case.columns:
            if name == case.bad:
                values.append(f"{stored.BAD_VALUES[kind][0]} as {quote(name)}")
            else:
                seed = first[name] if first else 0
                values.append(f"{stored.literal(kind, seed + 500)} as {quote(name)}")
        parts.append("select " + ", ".join(values))
    return " union all ".join(parts)


def _write_history(case: stored.StoredCase, root: Path) -> list[list[dict]]:
    """The target as the case's history leaves it; the target rows per file (oldest first)."""
    con = duckdb.connect()
    rows = sorted(case.target, key=lambda r: stored.token(case.key_kind, r[case.key]))
    if case.history == "package":
        run_merge(
            con.sql(_select(dataclasses.replace(case, bad=None), rows, None)),
            root,
            [case.key],
            connection=con,
            rows_per_file=3,
            durable=False,
        )
        return [rows]
    root.mkdir(parents=True)
    size = min(3, -(-len(rows) // 2))  # at least two files: the oldest one differs
    files = [rows[i : i + size] for i in range(0, len(rows), size)]
    for index, chunk in enumerate(files):
        select = " union all ".join(
            "select "
            + ", ".join(
                f"{stored.stored_literal(kind, r[name])} as {quote(name)}"
                for name, kind in case.columns
            )
            for r in chunk
        )
        table = con.sql(select).to_arrow_table()
        if index == 0:
            if case.missing:
                table = table.drop_columns([case.missing])
            for name in case.narrow:
                i = table.schema.get_field_index(name)
                table = table.set_column(i, name, table.column(name).cast(pa.int32()))
            if case.conflict:
                i = table.schema.get_field_index(case.conflict)
                as_text = table.column(case.conflict).cast(pa.string())
                table = table.set_column(i, case.conflict, as_text)
        pq.write_table(table, root / f"part-{index}.parquet")
    con.close()
    return files


def _dataset_tokens(case: stored.StoredCase, root: Path) -> list[dict]:
    con = duckdb.connect()
    cur = con.execute(
        f"select * from read_parquet('{root}/**/*.parquet', union_by_name = true)"
    )
    names = [d[0] for d in cur.description]
    kinds = case.kinds()
    got = [
        {n: stored.read_token(kinds[n], v) for n, v in zip(names, r, strict=True)}
        for r in cur.fetchall()
    ]
    con.close()
    return got


def _sorted_rows(rows: list[dict]) -> list[str]:
    return sorted(repr(sorted(r.items())) for r in rows)


def run_stored_case(case: stored.StoredCase, tmp: Path) -> list[str]:
    root = tmp / f"ds_{case.id}"
    try:
        files = _write_history(case, root)
        target = [case.tokens(r, i) for i, chunk in enumerate(files) for r in chunk]
        if case.history == "package":
            target = [case.tokens(r) for r in files[0]]
        con = duckdb.connect()
        select = _select(case, case.source, case.offsets)
        args = {
            "strategy": case.strategy,
            "connection": con,
            "rows_per_file": 3,
            "durable": False,
            "max_delete_fraction": 1,
        }
        before = fingerprint(root)
        if case.conflict or case.bad:
            try:
                run_merge(con.sql(select), root, [case.key], **args)
            except ParquetMergeError as e:
                message = str(e)
            else:
                raise AssertionError("not refused")
            if case.conflict:
                expected_message = f"disagree on the type of column '{case.conflict}'"
            else:
                expected_message = stored.BAD_VALUES[case.kinds()[case.bad]][1]
            assert expected_message in message, f"refusal: {message}"
            assert fingerprint(root) == before, "a refused merge changed the dataset"
            assert not list(tmp.glob(f".{root.name}.dbt_merge/tx-*")), "work files left"
            return []
        source = [case.tokens(r) for r in case.source]
        options = Options(max_delete_fraction=1)
        rows, stats = merge(case.strategy, source, target, [case.key], options)
        report = run_merge(con.sql(select), root, [case.key], **args)
        assert report.stats == stats.as_dict(), f"stats {report.stats} != reference {stats}"
        got = _dataset_tokens(case, root)
        assert _sorted_rows(got) == _sorted_rows(rows), (
            f"rows differ:\n got {_sorted_rows(got)}\n ref {_sorted_rows(rows)}"
        )
        after = fingerprint(root)
        # the same SELECT again, each TIME WITH TIME ZONE spelled at another offset
        offsets = {i: (o + 3) % 12 for i, o in case.offsets.items()}
        again = run_merge(con.sql(_select(case, case.source, offsets)), root, [case.key], **args)
        changed = (again.stats["inserted"], again.stats["updated"], again.stats["deleted"])
        assert changed == (0, 0, 0), f"second run changed rows: {again.stats}"
        assert fingerprint(root) == after, "second run rewrote files"
        con.close()
    except Exception as e:  # noqa: BLE001 - one case's crash must not hide the others
        return [f"{case!r}\n" + _describe(e)]
    return []


def test_stored_case_mix():
    """What the generated issue-21 cases cover (guards the generator)."""
    cases = stored_cases()
    assert len(cases) == STORED_CASES
    kinds = {kind for c in cases for _, kind in c.columns}
    assert kinds >= set(stored.KEY_KINDS) | set(stored.VALUE_KINDS)
    histories = [c.history for c in cases]
    assert {h: histories.count(h) >= 8 for h in stored.HISTORIES} == dict.fromkeys(
        stored.HISTORIES, True
    ), histories
    assert sum(c.key_kind == "collide" for c in cases) >= 20
    assert sum(c.bad is not None for c in cases) >= 8
    assert sum(c.conflict is not None for c in cases) >= 8


@pytest.mark.parametrize("strategy", stored.STRATEGIES)
def test_stored_types_and_schema_histories_match_reference(strategy, tmp_path):
    failures, cases, failed = [], 0, 0
    for case in stored_cases():
        if case.strategy == strategy:
            found = run_stored_case(case, tmp_path)
            cases, failed, failures = cases + 1, failed + bool(found), failures + found
    record_cases(cases, failed)
    assert not failures, f"{len(failures)} failures:\n\n" + "\n\n".join(failures[:6])
