"""Differential tests: dbt + the package on DuckDB and Spark against the Python reference.

Every generated case (cases.py) becomes one model; cases that dbt must run with the same flags
(`--empty`, `--full-refresh`, `--threads 1` or 4) share a project, so one dbt invocation runs
many of them. Each project is run three times:
1. with the cases' flags: the table must be what the reference says (rows and the five
   statistics; or the error and an unchanged table; or, for `--empty` on an existing table,
   `skipped (--empty)` and an unchanged table);
2. plainly again: the reference applied to the table as run 1 left it (for almost every case:
   nothing changes, 0 inserted/updated/deleted);
3. `--full-refresh` of every 4th case: the table is rebuilt from the SELECT, or, when the
   SELECT is bad, left as it was.
A SELECT using random() cannot be predicted row by row: for those the statistics must agree
with a diff of the table before and after, no key may repeat, and no key of the SELECT be lost.
The Spark cases are a subset of the DuckDB ones (those without DuckDB-only types), and every
8th of them also runs over thrift (a Thrift server in front of a standalone cluster). About half
of the Spark cases' targets are merge-on-read Iceberg tables (merge_on_read: created with the
table properties, which the model's tblproperties also give the tables dbt builds), the others
copy-on-write, and in-process about a third of each are of Iceberg's format version 3, half of
those written at format 2 and then upgraded (files without row lineage); the reference is the
same for all. Merges into merge-on-read and v3 tables take the passes, as every merge does by
default; in-process, the projects run with `--threads 1` ask for the write-once path
(dbt_merge_commit_counts: true: written once into a branch and counted from the commit,
merge_on_branch, where the session allows it). Their
full_merge cases are written a third each by MERGE INTO, by INSERT OVERWRITE (full_merge_write)
and as full_merge_write='auto' picks.

Volume: the hypothesis settings profile in DBT_MERGE_PROFILE picks it. `ci` (the default,
`make test`): ~1,000 cases on DuckDB and ~130 on Spark, the same on every run.
`DBT_MERGE_PROFILE=long` (by hand): 5x as many, a new seed each run (printed in the report;
DBT_MERGE_SEED=<seed> replays it). DBT_MERGE_ONLY=<ids or features> runs a slice, e.g.
`DBT_MERGE_ONLY=same_name,ups0005`. Each engine's report (cases run, failures by the case
features they exercise, one example each) is written to DBT_MERGE_REPORT_DIR (default: the
test's temporary folder) and shown when the test fails.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from dbt_helpers import run_dbt
from suite_summary import record_cases
from support.cases import (
    COLLATIONS,
    ERROR_EXCERPTS,
    INTERNAL_NAMES,
    MODES,
    NOT_COLUMN_NAMES,
    PROFILE,
    SEED,
    STRATEGY_NAMES,
    TIME_ZONES,
    Case,
    Outcome,
    Table,
    generate_cases,
    scan_internal_names,
    with_collations,
    with_conditions,
    with_dry_run,
    with_soft_delete,
    with_time_zones,
)
from support.harness import (
    PROCESSES,
    PROFILES_DIR,
    ROOT,
    DuckEngine,
    SparkEngine,
    ThriftEngine,
    make_project,
    model_sql,
    process_pool,
)
from support.reference import STRATEGIES, canonical, row_token, update_columns

PER_STRATEGY = {"upsert": 220, "insert": 150, "update": 170, "full_merge": 290, "deduplicate": 240}
SCALE = {"ci": 1, "long": 5}[PROFILE]
#: Spark units picked at a regular step, then topped up (spark_cases): 80 took 258 s of a full
#: run on this machine, 48 topped up to cover every feature and table kind twice 213 s
SPARK_CASES = {"ci": 48, "long": 400}[PROFILE]
#: the least number of Spark cases for every feature and every table kind (spark_cases)
SPARK_COVER = {"ci": 2, "long": 4}[PROFILE]
THRIFT_EVERY = 8  # of the Spark cases' units: a model over thrift costs seconds, not tenths
ANSI_EVERY = 4  # of the Spark cases' units that convert a type, run again in ANSI mode
SCHEMA = "rel_diff"
#: Iceberg table properties of a merge-on-read target (see merge_on_read)
MERGE_ON_READ = {"write.merge.mode": "merge-on-read", "write.update.mode": "merge-on-read",
                 "write.delete.mode": "merge-on-read"}


def merge_on_read(case: Case) -> bool:
    """On Spark: is the case's target a merge-on-read table? About half are, by table name (the
    two cases sharing a name alike), the same on every run."""
    return zlib.crc32(case.table.encode()) % 2 == 0


def format_v3(case: Case) -> bool:
    """On Spark in-process (whose session has Iceberg's SQL extensions, which a copy-on-write
    MERGE into a v3 table needs): is the case's target an Iceberg table of format version 3 (row
    lineage, deletion vectors)? About a third of each kind are, by table name."""
    return zlib.crc32(case.table.encode()) // 2 % 3 == 0


def upgraded(case: Case) -> bool:
    """On Spark in-process, of the format v3 targets: was the table written at format version 2
    and then upgraded (its first files carry no row lineage, which the write-once path must not
    count from)? Half of them are, by table name."""
    return format_v3(case) and zlib.crc32(case.table.encode()) // 6 % 2 == 0


def table_properties(case: Case, engine) -> dict | None:
    """The Iceberg table properties of the case's target on `engine` (none on DuckDB): merge-on-read
    for about half, format version 3 for about a third of those in-process."""
    if engine.dialect != "spark":
        return None
    properties = dict(MERGE_ON_READ) if merge_on_read(case) else {}
    if format_v3(case) and engine.name == "spark":
        properties["format-version"] = "3"
    return properties or None


def full_merge_write(case: Case) -> str | None:
    """On Spark, full_merge_write for a full_merge case: a third each 'overwrite', 'merge' and
    the default (auto, which overwrites only when no matched row is left as it is), by the case's
    number, so that both writes meet every kind of case (the thrift slice included)."""
    if case.strategy != "full_merge":
        return None
    return ("overwrite", "merge", None)[int(re.sub(r"\D", "", case.id)) % 3]


@cache
def all_cases() -> tuple[Case, ...]:
    cases: list[Case] = []
    for strategy in STRATEGY_NAMES:
        cases += generate_cases(strategy, PER_STRATEGY[strategy] * SCALE)
    return tuple(cases)


def units_of(cases) -> list[list[Case]]:
    """The cases in units: the cases sharing a table name (a case and its twin-schema partner)
    go together, in the order of their first case."""
    units: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        units[case.table].append(case)
    return list(units.values())


def spark_features(case: Case) -> set[str]:
    """The case's features and, on Spark, its table's kind: merge-on-read or copy-on-write per
    strategy, format v3 (upgraded from 2 or not) and full_merge's write, so that spark_cases
    covers each table kind as it covers the features."""
    features = set(case.features())
    if case.target is not None:
        mor = "merge_on_read" if merge_on_read(case) else "copy_on_write"
        features.add(f"spark:{case.strategy}:{mor}")
        if format_v3(case):
            features.add(f"spark:{case.strategy}:v3" + (":upgraded" if upgraded(case) else ""))
    if case.strategy == "full_merge":
        features.add(f"spark:full_merge_write:{full_merge_write(case)}")
    return features


@cache
def spark_cases() -> tuple[Case, ...]:
    """Every k-th case Spark can run, plus cases of features and table kinds (spark_features)
    that left with fewer than SPARK_COVER; the two cases sharing a table name go together."""
    eligible = [u for u in units_of(all_cases()) if not any(c.duckdb_only for c in u)]
    step = max(1, len(eligible) // SPARK_CASES)
    chosen = eligible[::step]
    counts = Counter(f for u in chosen for c in u for f in spark_features(c))
    for unit in eligible:
        features = {f for c in unit for f in spark_features(c)}
        if all(unit is not u for u in chosen) and any(counts[f] < SPARK_COVER for f in features):
            chosen.append(unit)
            counts.update(features)
    picked = {id(u) for u in chosen}
    return tuple(c for u in eligible if id(u) in picked for c in u)


def only(cases) -> tuple[Case, ...]:
    """The cases DBT_MERGE_ONLY names (comma-separated case ids or features, e.g.
    `same_name,ups0005`; a case sharing its table name comes with its partner), else all."""
    wanted = set(filter(None, os.environ.get("DBT_MERGE_ONLY", "").split(",")))
    if not wanted:
        return tuple(cases)
    tables = {c.table for c in cases if c.id in wanted or wanted & c.features()}
    return tuple(c for c in cases if c.table in tables)


@cache
def condition_cases() -> tuple[Case, ...]:
    """merge_update_condition and delete_condition added to copies of about half the cases that
    can take them (see with_conditions); a suite of their own, so that the cases above stay as
    they are."""
    return tuple(c for c in map(with_conditions, all_cases()) if c is not None)


@cache
def spark_condition_cases() -> tuple[Case, ...]:
    """Every 16th condition case Spark can run (every 4th took ~600 s of CI's 90 minutes, every
    8th 250 s; 8th in the long profile)."""
    return tuple(c for c in condition_cases() if not c.duckdb_only)[::16 // SCALE or 1]


@cache
def dry_run_cases() -> tuple[Case, ...]:
    """config(dry_run=true) on copies of every 16th case (see with_dry_run): a suite of its own."""
    return tuple(c for c in map(with_dry_run, all_cases()[::16]) if c is not None)


@cache
def spark_dry_run_cases() -> tuple[Case, ...]:
    """Every 6th dry-run case Spark can run."""
    return tuple(c for c in dry_run_cases() if not c.duckdb_only)[::6]


@cache
def soft_delete_cases() -> tuple[Case, ...]:
    """soft_delete_column on copies of every 3rd full_merge case and every 3rd condition case
    with delete_condition (see with_soft_delete): a suite of its own."""
    full = [c for c in all_cases() if c.strategy == "full_merge"][::3]
    conditional = [c for c in condition_cases() if c.opts.delete_condition][::3]
    return tuple(c for c in map(with_soft_delete, full + conditional) if c is not None)


@cache
def spark_soft_delete_cases() -> tuple[Case, ...]:
    """Every 12th soft-delete case Spark can run (every 6th in the long profile)."""
    return tuple(c for c in soft_delete_cases() if not c.duckdb_only)[::12 // SCALE or 1]


@cache
def time_zone_cases() -> tuple[Case, ...]:
    """Every 4th case with a TIMESTAMP column, its timestamps made TIMESTAMP WITH TIME ZONE
    and run in another session time zone (see with_time_zones; DuckDB): a suite of its own."""
    return tuple(c for c in map(with_time_zones, all_cases()) if c is not None)[::4]


@cache
def collation_cases() -> tuple[Case, ...]:
    """Every 8th case with a text column, its SELECT's text differing from the table's by case
    or accent only, merged where DuckDB would compare text by a collation (see
    with_collations): a suite of its own."""
    return tuple(c for c in map(with_collations, all_cases()) if c is not None)[::8]


@cache
def thrift_cases() -> tuple[Case, ...]:
    """Every THRIFT_EVERY-th unit of the Spark cases (the two cases sharing a table name go
    together)."""
    return tuple(c for u in units_of(spark_cases())[::THRIFT_EVERY] for c in u)


@cache
def ansi_cases() -> tuple[Case, ...]:
    """Every ANSI_EVERY-th unit of the Spark cases whose SELECT and target differ in a column's
    type (types:...), with the flags of a plain `dbt run`: run again with
    spark.sql.ansi.enabled=true, where a cast that cannot hold a value fails instead of giving
    NULL, and arithmetic overflows fail. The outcome must not change."""
    typed = [u for u in units_of(spark_cases()) if all(c.mode == "run" for c in u)
             and any(f.startswith("types:") for c in u for f in c.features())]
    return tuple(c for u in typed[::ANSI_EVERY] for c in u)


# ------------------------------------------------------------------ running


@dataclass
class Failure:
    case: Case
    step: str  # first | rerun | refresh
    text: str

    def __str__(self) -> str:
        return f"[{self.case.id} {self.step}] {self.text}\n  case: {self.case!r}"


#: dbt vars that make Spark count by the full outer join it uses for sources too large to
#: broadcast (count_changes_spark.sql): the test data is small, so without them every count
#: would take the left join. The main Spark suite keeps the left join; its ANSI slice, the
#: thrift slice and the condition, dry-run and soft-delete suites take the full one.
SPARK_FULL_JOIN = {"dbt_merge_spark_full_join_bytes": 0}


def run_engine(engine, cases, tmp: Path, vars: dict | None = None) -> list[Failure]:
    """Run `cases` on `engine`, grouped by the flags they need; return what failed."""
    engine.setup(SCHEMA, SCHEMA + "_twin", SCHEMA + "_src")
    groups: dict[tuple[str, int], list[Case]] = defaultdict(list)
    for case in cases:
        groups[(case.mode, min(case.threads, engine.max_threads))].append(case)
    failures: list[Failure] = []
    for (mode, threads), group in sorted(groups.items()):
        failures += run_group(engine, group, mode, threads, tmp, {**(vars or {}),
                                                                  **write_once(engine, threads)})
    return failures


def run_duckdb(cases, tmp: Path, vars: dict | None = None) -> list[Failure]:
    """run_engine on DuckDB, the cases shared out by units to PROCESSES processes side by side,
    each on its own DuckDB file (duckdb_share; the DuckDB differential suites took ~640 s of
    CI's run in one process); what failed in each."""
    units = units_of(cases)
    shares = [[c for u in units[i::PROCESSES] for c in u] for i in range(PROCESSES)]
    shares = [s for s in shares if s]
    if len(shares) < 2:
        return duckdb_share(list(cases), tmp / "share0", vars, spawned=False)
    with process_pool(len(shares)) as pool:
        futures = [pool.submit(duckdb_share, share, tmp / f"share{i}", vars)
                   for i, share in enumerate(shares)]
        return [failure for future in futures for failure in future.result()]


def duckdb_share(cases: list[Case], tmp: Path, vars: dict | None = None,
                 spawned: bool = True) -> list[Failure]:
    """run_engine on DuckDB for one share of the cases, in a DuckDB file of its own under `tmp`
    (the profile's path is DBT_MERGE_DUCKDB_PATH); spawned, with dbt's parse cache on as
    conftest.py turns it on for the tests' own process."""
    tmp.mkdir(parents=True, exist_ok=True)
    if spawned:
        os.environ["DBT_MERGE_DUCKDB_PATH"] = str(tmp / "share.duckdb")
        if not os.environ.get("DBT_MERGE_TESTS_NO_PARSE_CACHE"):
            from dbt_common.tests import enable_test_caching

            enable_test_caching()
    with DuckEngine() as engine:
        return run_engine(engine, cases, tmp, vars)


def write_once(engine, threads: int) -> dict:
    """The dbt vars of a group: in-process Spark projects run with one thread write once where
    the table allows it (the path a project asks for with dbt_merge_commit_counts); the others,
    and every other engine, take the default, the passes."""
    return {"dbt_merge_commit_counts": True} if engine.name == "spark" and threads == 1 else {}


def run_group(engine, cases: list[Case], mode: str, threads: int, tmp: Path,
              vars: dict | None = None) -> list[Failure]:
    """One project: run 1 with the group's flags, run 2 plainly, run 3 --full-refresh."""
    name = f"diff_{engine.name}_{mode}_{threads}"
    models, _, yml = write_cases(engine, cases)
    project = make_project(tmp / name, name, models, vars, yml)
    steps = [
        ("first", mode, cases),
        ("rerun", "run", cases),
        ("refresh", "full_refresh", cases[::4]),
    ]
    state = {c.id: c.initial() for c in cases}
    failures: list[Failure] = []
    for step, step_mode, selected in steps:
        args = ["run", *MODES[step_mode], "--threads", str(threads), "--no-write-json"]
        if selected is not cases:
            args += ["--select", *[c.model for c in selected]]
        run = run_dbt(args, project, engine.name, PROFILES_DIR)
        for case in selected:
            if any(f.case is case for f in failures):
                continue  # one failure per case: later runs would only repeat it
            problem, state[case.id] = check_model(engine, run, case, step_mode, state[case.id])
            if problem:
                if engine.dialect == "spark" and merge_on_read(case):
                    problem += " (a merge-on-read target)"
                failures.append(Failure(case, step, problem))
    return failures


def write_cases(engine, cases: list[Case]) -> tuple[dict, None, dict]:
    """Create each case's source and target; return make_project's models, vars and yml."""
    src = SCHEMA + "_src"
    models, tables, properties = {}, [], []
    for case in cases:
        engine.source(src, f"s_{case.id}", case.source_columns, case.source)
        source_schema, identifier = engine.source_location(src, f"s_{case.id}")
        tables.append({"name": f"s_{case.id}", "identifier": identifier})
        schema = SCHEMA + case.schema_suffix
        iceberg = table_properties(case, engine)
        if case.target is None:
            engine.drop(schema, case.table)
        else:
            engine.create(schema, case.table, case.target_columns, case.target, iceberg,
                          upgraded=engine.name == "spark" and upgraded(case))
        cfg = {**case.config(engine.quote), "schema": schema, "alias": case.table}
        if iceberg:
            cfg["tblproperties"] = iceberg
        if engine.dialect == "spark" and full_merge_write(case):
            cfg["full_merge_write"] = full_merge_write(case)
        select = case.select(
            "{{ source('src', 's_" + case.id + "') }}", engine.quote, engine.random_sql
        )
        # dbt's static parser keeps a backslash-escaped quote as two characters, so a value
        # holding both quote characters (a predicate on a column named it's) goes to the yml
        in_yml = {k: v for k, v in cfg.items() if both_quotes(v)}
        inline = {k: v for k, v in cfg.items() if k not in in_yml}
        models[case.model] = model_sql({**inline, **engine.model_config}, select)
        columns = case.contract_columns(engine.type_name)
        if columns:
            in_yml["contract"] = {"enforced": True}
        if in_yml:
            properties.append({"name": case.model, "config": in_yml, "columns": columns or []})
    yml = {"sources": [{"name": "src", "schema": source_schema, "tables": tables}]}
    return models, None, {**yml, "models": properties}


def both_quotes(value) -> bool:
    values = value if isinstance(value, list) else [value]
    return any(isinstance(v, str) and "'" in v and '"' in v for v in values)


# ------------------------------------------------------------------ checking


SPARK_REFUSES_NONDET = "INVALID_NON_DETERMINISTIC_EXPRESSIONS"


def check_model(engine, run, case: Case, mode: str, before: Table | None):
    """(what is wrong or None, the table afterwards) for one model of one invocation."""
    expected = case.outcome(mode, before, engine.dialect)
    try:
        result = run.result(case.model)
    except KeyError as e:  # the invocation itself failed
        return f"{e}; dbt: {str(run.exception)[:500]}", before
    status, message = str(result.status), result.message or ""
    shape = expected.after if expected else case.columns_after(mode, before, status == "success")
    after = read_table(engine, SCHEMA + case.schema_suffix, case.table, shape)
    try:
        # Spark refuses a non-deterministic MERGE source (INVALID_NON_DETERMINISTIC_EXPRESSIONS);
        # stage_select writes such a SELECT's rows once, so that refusal must never reach a run.
        assert SPARK_REFUSES_NONDET not in message, message[:600]
        if case.nondet:
            check_invariants(case, mode, before, after, status, message, run)
        if expected:
            check_expected(case, expected, before, after, status, message, run)
    except AssertionError as e:
        return str(e), after
    return None, after


def read_table(engine, schema: str, table: str, shape: Table | None) -> Table | None:
    """The table's rows, with the column types `shape` says it has (when the names agree)."""
    if not engine.exists(schema, table):
        return None
    names, rows = engine.rows(schema, table)
    columns = shape.columns if shape and shape.names == names else [(n, "") for n in names]
    return Table(columns, [{n: naive_utc(v) for n, v in r.items()} for r in rows])


def naive_utc(value):
    """A TIMESTAMP WITH TIME ZONE value as the cases write it: a naive datetime in UTC."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def check_expected(case, expected: Outcome, before, after, status, message, run) -> None:
    mask = [case.random_column] if case.random_column else []
    if expected.error:
        assert status == "error", (
            f"expected error {expected.error.kinds}, got {status}: {message[:300]}"
        )
        assert any(error_matches(k, case.model, message) for k in expected.error.kinds), (
            f"expected error {expected.error.kinds} "
            f"({[ERROR_EXCERPTS[k] for k in expected.error.kinds]}), got: {message[:600]}"
        )
        assert_table(after, before, "a failed run changed the table", mask)
    elif expected.skipped:
        assert status == "success" and "skipped (--empty)" in message, (
            f"expected 'skipped (--empty)', got {status}: {message[:300]}"
        )
        assert_table(after, before, "--empty changed the table", mask)
    else:
        assert status == "success", f"expected success, got {status}: {message[:600]}"
        if case.dry_run:
            assert message.startswith("DRY RUN (nothing written) MERGE "), message[:300]
        got = run.stats(case.model)
        assert got == expected.stats.as_dict(), f"stats {got} != reference {expected.stats}"
        held = re.search(r"(\d+) held back", message)
        assert (int(held.group(1)) if held else 0) == expected.stats.held_back, (
            f"held back: {message[:300]} != reference {expected.stats.held_back}")
        assert_table(after, expected.after, "rows differ from the reference", mask)


def error_matches(kind: str, model: str, message: str) -> bool:
    ours = kind != "contract"
    return ERROR_EXCERPTS[kind] in message and (
        not ours or f"dbt_merge: model '{model}'" in message
    )


def assert_table(got: Table | None, want: Table | None, what: str, mask: list[str]) -> None:
    """`got` holds the same columns and, as a multiset, the same rows as `want`."""
    if want is None:
        assert got is None, f"{what}: a table exists where none should"
        return
    assert got is not None, f"{what}: the table is missing"
    assert got.names == want.names, f"{what}: columns {got.names} != {want.names}"
    names = [n for n in want.names if n not in mask]
    g, w = canonical(got.rows, names), canonical(want.rows, names)
    if g != w:
        extra, missing = Counter(g) - Counter(w), Counter(w) - Counter(g)
        raise AssertionError(
            f"{what} ({len(got.rows)} rows, reference {len(want.rows)}):\n"
            f"  only in the table: {shorten(list(extra.elements()))}\n"
            f"  only in the reference: {shorten(list(missing.elements()))}"
        )


def shorten(items: list, n: int = 6) -> str:
    text = repr(items[:n]) + (f" ... and {len(items) - n} more" if len(items) > n else "")
    return text if len(text) < 1500 else text[:1500] + "..."


def check_invariants(case: Case, mode, before, after, status, message, run) -> None:
    """What holds whatever random() returned: the statistics are the diff of the table, keys
    stay unique, rows come from the SELECT, and no key of the SELECT is lost."""
    assert status == "success", f"expected success, got {status}: {message[:600]}"
    assert after is not None, "no table after a successful run"
    stats = run.stats(case.model)
    key, names = case.key, case.names
    rebuild = before is None or "full_refresh" in mode
    prior = {row_token(r, key): row_token(r, names) for r in ([] if rebuild else before.rows)}
    now = {row_token(r, key): row_token(r, names) for r in after.rows}
    assert len(now) == len(after.rows), "a key occurs more than once in the table"
    selected = {row_token(r, key) for r in case.source}
    assert set(now) <= set(prior) | selected, "a key neither in the table nor in the SELECT"
    both = set(now) & set(prior)
    changed = {k for k in both if now[k] != prior[k]}
    diff = {
        "inserted": len(set(now) - set(prior)),
        "updated": len(changed),
        "deleted": len(set(prior) - set(now)),
        "total": len(after.rows),
    }
    assert {k: stats[k] for k in diff} == diff, f"stats {stats} != the table's diff {diff}"
    assert stats["unchanged"] <= len(both) - len(changed), f"stats {stats}: too many unchanged"
    _, source_only, target_only, _ = STRATEGIES[case.strategy]
    if target_only != "delete":
        assert not set(prior) - set(now), "rows left the table"
    if case.nondet == "value" and not rebuild:  # every SELECT row is known but one value
        assert stats["updated"] + stats["unchanged"] == len(selected & set(prior))
        if source_only == "insert":
            assert selected <= set(now), "a key of the SELECT is not in the table"


# ------------------------------------------------------------------ reports


def report(engine: str, cases, failures: list[Failure], dialect: str) -> str:
    """Cases run and failures, by each feature the cases exercise (a case counts under all of
    its features), with one failing example per feature."""
    failed = {f.case.id: f for f in failures}
    ran: Counter = Counter()
    bad: Counter = Counter()
    example: dict[str, Failure] = {}
    for case in cases:
        features = case.features() | {"expect:" + expected_kind(case, dialect)}
        for feature in features:
            ran[feature] += 1
            if case.id in failed:
                bad[feature] += 1
                example.setdefault(feature, failed[case.id])
    lines = [
        f"{engine}: {len(cases)} cases, {len(failed)} failed "
        f"(profile {PROFILE}{f', seed {SEED}' if PROFILE == 'long' else ''})",
        f"{'feature':42} {'cases':>6} {'failed':>6}  example",
    ]
    for feature in sorted(ran, key=lambda f: (-bad[f] / ran[f], f)):
        ex = example.get(feature)
        first = f"{ex.case.id} {ex.step}: {ex.text.splitlines()[0][:110]}" if ex else ""
        lines.append(f"{feature:42} {ran[feature]:6} {bad[feature]:6}  {first}")
    by_step = Counter(f.step for f in failures)
    lines.append(f"failures by run: {dict(by_step)}")
    return "\n".join(lines)


def expected_kind(case: Case, engine: str) -> str:
    outcome = case.outcome(case.mode, case.initial(), engine)
    if outcome is None:
        return "unknown"
    if outcome.error:
        return outcome.error.kind
    return "skipped" if outcome.skipped else "ok"


def finish(engine: str, cases, failures: list[Failure], tmp: Path, dialect: str = "") -> None:
    record_cases(len(cases), len({f.case.id for f in failures}))
    text = report(engine, cases, failures, dialect or engine)
    folder = Path(os.environ.get("DBT_MERGE_REPORT_DIR") or tmp)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"differential_{engine}.txt"
    path.write_text(text + "\n\n" + "\n\n".join(map(str, failures)) + "\n")
    assert not failures, f"{text}\n\nall failures: {path}\n\n" + "\n\n".join(
        str(f)[:3000] for f in failures[:10]
    )


# ------------------------------------------------------------------ tests


def test_case_mix():
    """The generated cases cover what the issue lists (guards the generator itself)."""
    cases = all_cases()
    assert len(cases) >= 1000 * SCALE and len(spark_cases()) >= SPARK_CASES
    features = Counter(f for c in cases for f in c.features())
    spark = Counter(f for c in spark_cases() for f in c.features())

    def at_least(n: int, *names: str, counts: Counter = features) -> None:
        for name in names:
            assert counts[name] >= n * SCALE, f"{name}: {counts[name]} cases, want >= {n}"

    expected = [c.outcome(c.mode, c.initial(), "duckdb") for c in cases]
    kinds = Counter(e.error.kind for e in expected if e and e.error)
    for kind in set(ERROR_EXCERPTS) - {"time_zone"}:  # time_zone: time_zone_cases
        assert kinds[kind] >= 8 * SCALE, (kind, kinds)
    ok = [e.stats for e in expected if e and e.stats]
    for stat, n in (("inserted", 150), ("updated", 80), ("unchanged", 80), ("deleted", 20)):
        assert sum(getattr(s, stat) > 0 for s in ok) >= n * SCALE, stat
    assert sum(e.skipped for e in expected if e) >= 50
    at_least(50, "target:missing", "target:duplicate_keys", "target:null_keys")
    assert sum(c.target == [] for c in cases) >= 20
    assert sum(not c.source for c in cases) >= 20
    assert sum(len(c.key) > 1 for c in cases) >= 300
    assert sum("nan" in repr(c) for c in cases) >= 50

    # names: internal (in every case variant), reserved, odd characters
    at_least(150, "names:internal", "names:reserved", "names:odd")
    at_least(80, "names:internal_case_variant")
    used = {n.lower() for c in cases for n in c.key + c.names}
    missing = {n for n in scan_internal_names(ROOT / "macros") - NOT_COLUMN_NAMES
               if n.lower() not in used}
    assert not missing, f"internal names of macros/ the cases never use: {missing}"
    assert {n.lower() for n in INTERNAL_NAMES} <= used
    assert sum(any(n in INTERNAL_NAMES for n in c.key) for c in cases) >= 100  # as keys
    # type pairs, for keys and for values
    for pair in ("int->int32", "dec->int", "float->int", "int->dec", "dec->dec", "int->float",
                 "ts->date", "date->ts", "str->uuid", "str->nocase"):  # fmt: skip
        at_least(20, f"types:key:{pair}")
    at_least(4, "types:key:str->int", "types:key:int->str")  # refused: has type
    for pair in ("float->real", "dec->dec", "dec->int", "float->int", "ts->date", "str->uuid",
                 "int->dec", "int32->int", "real->float"):  # fmt: skip
        at_least(20, f"types:value:{pair}")
    spark_least = SPARK_COVER if PROFILE == "ci" else 3  # times SCALE in at_least
    for pair in ("key:dec->int", "key:float->int", "key:ts->date", "value:float->real"):
        at_least(spark_least, f"types:{pair}", counts=spark)
    # incremental_predicates with rows outside, on_key_outside_predicates
    at_least(60, "predicates:rows_outside")
    at_least(20, "on_key_outside:insert")
    at_least(3, "on_key_outside:skip", "on_key_outside:delete")
    # full_merge: max_delete_fraction and how much the SELECT deletes
    for value in ("None", "0", "0.3", "1"):
        at_least(15, f"max_delete_fraction:{value}")
    for share in ("none", "few", "most", "all"):
        at_least(8, f"deletes:{share}")
    # how dbt runs it
    at_least(60, "mode:empty")
    at_least(25, "mode:full_refresh", "mode:empty_full_refresh")
    at_least(250, "threads:1", "threads:4")
    at_least(40, "same_name")
    at_least(spark_least, "same_name", "mode:empty", "contract:ok", "nondet:value", counts=spark)
    for strategy in STRATEGY_NAMES:  # merge-on-read and copy-on-write targets, each strategy
        for mor in (True, False):
            n = sum(c.strategy == strategy and merge_on_read(c) is mor and c.target is not None
                    for c in spark_cases())
            assert n >= max(SPARK_COVER, 5 * (SCALE - 1)), (
                strategy, "merge-on-read" if mor else "copy-on-write", n)
        v3 = sum(c.strategy == strategy and format_v3(c) and c.target is not None
                 for c in spark_cases())
        assert v3 >= SPARK_COVER, (strategy, "format v3", v3)
    for strategy in ("upsert", "insert", "full_merge"):  # the strategies written once on v3
        n = sum(c.strategy == strategy and upgraded(c) and c.target is not None
                for c in spark_cases())
        assert n >= SCALE, (strategy, "format 2 upgraded to 3", n)
    writes = Counter(full_merge_write(c) for c in spark_cases() if c.strategy == "full_merge")
    assert min(writes.values()) >= max(SPARK_COVER, 8 * (SCALE - 1)) and len(writes) == 3, writes
    assert all(  # twins share a table name, in different schemas
        sum(o.table == c.table for o in cases) == 2 for c in cases if c.same_name
    )
    # contracts, random() SELECTs
    at_least(80, "contract:ok")
    at_least(15, "contract:wrong_type", "contract:extra_column")
    at_least(25, "nondet:value", "nondet:filter")
    # what "unchanged" means
    at_least(60, "detect:check_columns")
    at_least(40, "detect:off")


def test_reference_is_idempotent():
    """Rerunning a merge that succeeded changes nothing (guards the reference). With
    incremental_predicates the rerun may instead insert again (on_key_outside_predicates=
    'insert', dbt's behaviour) or refuse a key that run 1 inserted outside the predicates."""
    for case in all_cases():
        if case.nondet or case.mode.startswith("empty"):
            continue  # random() rewrites; --empty merges nothing, so its rerun is a merge
        first = case.outcome(case.mode, case.initial(), "duckdb")
        if first.error:
            continue
        second = case.outcome("run", first.after, "duckdb")
        if case.opts.predicate and (case.opts.on_key_outside or second.error):
            assert second.stats or second.error.kind == "key_outside_predicates", (case, second)
            continue
        s = second.stats
        upd = update_columns(case.names, case.key, case.opts)
        if case.opts.check_columns and not set(case.opts.check_columns) <= set(upd):
            continue  # a check column that is never updated differs again on every run
        if case.opts.detect_unchanged is False:  # every matched row is rewritten, as it was
            assert s and (s.inserted, s.deleted) == (0, 0), (case, second)
            assert canonical(second.after.rows, case.names) == canonical(
                first.after.rows, case.names), case
            continue
        assert s and (s.inserted, s.updated, s.deleted) == (0, 0, 0), (case, second)


@pytest.fixture(scope="module")
def duckdb_failures(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rel")
    return run_duckdb(only(all_cases()), tmp), tmp


def test_duckdb_matches_reference(duckdb_failures):
    failures, tmp = duckdb_failures
    finish("duckdb", only(all_cases()), failures, tmp)


@pytest.mark.spark
def test_spark_matches_reference(spark, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rel")
    failures = run_engine(SparkEngine(spark), only(spark_cases()), tmp)
    finish("spark", only(spark_cases()), failures, tmp)


@pytest.mark.spark
def test_spark_ansi_matches_reference(spark, tmp_path_factory):
    """A slice of the Spark cases in ANSI mode (the session dbt's session method shares)."""
    tmp = tmp_path_factory.mktemp("diff_spark_ansi")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        failures = run_engine(SparkEngine(spark), only(ansi_cases()), tmp, SPARK_FULL_JOIN)
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")
    finish("spark_ansi", only(ansi_cases()), failures, tmp, dialect="spark")


@pytest.mark.spark
@pytest.mark.thrift
def test_thrift_matches_reference(thrift, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rel")
    failures = run_engine(ThriftEngine(thrift), only(thrift_cases()), tmp, SPARK_FULL_JOIN)
    finish("spark_thrift", only(thrift_cases()), failures, tmp, dialect="spark")


def run_suite(name: str, engine, cases, tmp_path_factory) -> None:
    """Run a suite of cases (as DBT_MERGE_ONLY narrows it) on `engine`; fail with its report.
    `engine` the class DuckEngine: in processes side by side (run_duckdb)."""
    tmp = tmp_path_factory.mktemp("rel")
    cases = only(cases)
    if engine is DuckEngine:
        failures = run_duckdb(cases, tmp)
    else:
        vars = SPARK_FULL_JOIN if engine.dialect == "spark" else None
        failures = run_engine(engine, cases, tmp, vars)
    finish(f"{engine.name}_{name}", cases, failures, tmp, dialect=engine.dialect)


def run_duckdb_suite(name: str, cases, tmp_path_factory) -> None:
    run_suite(name, DuckEngine, cases, tmp_path_factory)


def test_duckdb_conditions_match_reference(tmp_path_factory):
    run_duckdb_suite("conditions", condition_cases(), tmp_path_factory)


@pytest.mark.spark
def test_spark_conditions_match_reference(spark, tmp_path_factory):
    run_suite("conditions", SparkEngine(spark), spark_condition_cases(), tmp_path_factory)


def test_duckdb_dry_runs_match_reference(tmp_path_factory):
    run_duckdb_suite("dry_run", dry_run_cases(), tmp_path_factory)


@pytest.mark.spark
@pytest.mark.skipif(PROFILE == "ci", reason=(
    "long profile only, for CI's 90 minutes: DuckDB runs the dry-run suite in every profile, and "
    "whether a run writes is decided in the materialization, the same on every engine"))
def test_spark_dry_runs_match_reference(spark, tmp_path_factory):
    run_suite("dry_run", SparkEngine(spark), spark_dry_run_cases(), tmp_path_factory)


def test_duckdb_soft_deletes_match_reference(tmp_path_factory):
    run_duckdb_suite("soft_delete", soft_delete_cases(), tmp_path_factory)


@pytest.mark.spark
def test_spark_soft_deletes_match_reference(spark, tmp_path_factory):
    run_suite("soft_delete", SparkEngine(spark), spark_soft_delete_cases(), tmp_path_factory)


def test_duckdb_time_zones_match_reference(tmp_path_factory):
    run_duckdb_suite("time_zones", time_zone_cases(), tmp_path_factory)


def test_duckdb_collations_match_reference(tmp_path_factory):
    run_duckdb_suite("collations", collation_cases(), tmp_path_factory)


def test_collation_case_mix():
    """The collation cases: each way DuckDB would compare text by a collation, keys and values
    told apart only by case, merges and refusals."""
    cases = collation_cases()
    features = Counter(f for c in cases for f in c.features())
    assert min(features[f"collation:{h}"] for h in COLLATIONS if h != "column") >= 3, features
    assert features["types:key:str->nocase"] + features["types:value:str->nocase"] >= 3, features
    kinds = Counter(expected_kind(c, "duckdb") for c in cases)
    assert kinds["ok"] >= 15 and len(kinds) >= 5, kinds


def test_time_zone_case_mix():
    """The time-zone cases refuse instants against wall-clock times, keys and values, and merge
    instants alike, in every zone."""
    cases = time_zone_cases()
    features = Counter(f for c in cases for f in c.features())
    for pair in ("ts->tstz", "tstz->ts"):
        assert features[f"types:key:{pair}"] + features[f"types:value:{pair}"] >= 8 * SCALE, (
            pair, features)
    kinds = Counter(expected_kind(c, "duckdb") for c in cases)
    assert kinds["time_zone"] >= 10 * SCALE and kinds["ok"] >= 15 * SCALE, kinds
    assert min(features[f"time_zone:{z}"] for z in TIME_ZONES) >= 5 * SCALE, features


def test_soft_delete_case_mix():
    """The soft-delete cases delete, revive and skip rows already deleted, on both routes."""
    cases = soft_delete_cases()
    features = Counter(f for c in cases for f in c.features())
    assert features["strategy:full_merge"] >= 30 * SCALE, features
    assert features["condition:delete"] >= 20 * SCALE, features
    assert features["soft_delete:deleted_rows"] >= 40 * SCALE, features
    outcomes = [o for c in cases if (o := c.outcome(c.mode, c.initial(), "duckdb")) and o.stats]
    assert sum(1 for o in outcomes if o.stats.deleted) >= 15 * SCALE, len(outcomes)
    assert len(spark_soft_delete_cases()) >= 8


def test_dry_run_case_mix():
    """The dry-run cases meet the outcomes that matter: checks that fail, merges that would
    change rows, first builds and --full-refresh."""
    cases = dry_run_cases()
    kinds = Counter(expected_kind(c, "duckdb") for c in cases)
    assert kinds["ok"] >= 25 * SCALE and sum(kinds.values()) - kinds["ok"] >= 15 * SCALE, kinds
    features = Counter(f for c in cases for f in c.features())
    assert features["target:missing"] >= 3 * SCALE, features
    assert features["mode:full_refresh"] + features["mode:empty_full_refresh"] >= 3 * SCALE
    changing = sum(1 for c in cases if (o := c.outcome(c.mode, c.initial(), "duckdb")) and o.stats
                   and o.stats.inserted + o.stats.updated + o.stats.deleted)
    assert changing >= 20 * SCALE, changing
    assert len(spark_dry_run_cases()) >= 8


def test_condition_case_mix():
    """The condition cases cover both conditions on every strategy that takes them."""
    cases = condition_cases()
    features = Counter(f for c in cases for f in c.features())
    for name in ("condition:update", "condition:delete"):
        assert features[name] >= 60 * SCALE, (name, features[name])
    for strategy in ("upsert", "update", "full_merge", "deduplicate"):
        assert features[f"strategy:{strategy}"] >= 15 * SCALE, (strategy, features)
    kinds = Counter(expected_kind(c, "duckdb") for c in cases)
    assert kinds["ok"] >= 100 * SCALE, kinds
    held = sum(1 for c in cases if (o := c.outcome(c.mode, c.initial(), "duckdb")) and o.stats
               and o.stats.held_back)
    deleted = sum(1 for c in cases if c.opts.delete_condition and (
        o := c.outcome(c.mode, c.initial(), "duckdb")) and o.stats and o.stats.deleted)
    assert held >= 20 * SCALE and deleted >= 20 * SCALE, (held, deleted)
