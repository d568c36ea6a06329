"""The differential suite through merge_table (dbt_merge.duckdb): a slice of the DuckDB cases,
run as Python calls on one connection instead of dbt models, against the same reference model.

Every TABLE_EVERY-th unit of the DuckDB cases and every 4th case of the suites of conditions,
soft deletes, dry runs, time zones and collations, less what only dbt has: `--empty` runs and
enforced contracts. A time-zone case runs on the connection set to its time zone, a collation
case on the connection set to its default_collation, as the caller's own setting. Each case's
SELECT is the query string given as the source, merged into the case's table three times, as
the dbt suite runs its models: first with the case's mode (a plain merge or
full_refresh=True), then plainly again, then (every 4th case) with full_refresh=True. After each
call: the statistics of the result and the rows of the table equal the reference's, or the call
raised MergeError with the catalogue's message (in the source's wording) and the table is as it
was; and the connection holds no transaction, temporary table or view of the call.
"""

from __future__ import annotations

from collections import defaultdict

from flow.test_differential import (
    SCHEMA,
    Failure,
    all_cases,
    collation_cases,
    condition_cases,
    dry_run_cases,
    finish,
    only,
    soft_delete_cases,
    time_zone_cases,
)
from support.cases import Case
from support.harness import DuckEngine, duck_quote

from doors.merge_dataframe.test_against_reference import check_call as check_door_call

TABLE_EVERY = 12  # of the DuckDB cases' units


def dbt_only(case: Case) -> bool:
    return case.mode.startswith("empty") or case.contract is not None


def table_cases() -> tuple[Case, ...]:
    units: dict[str, list[Case]] = defaultdict(list)
    for case in all_cases():
        if not dbt_only(case):
            units[case.table].append(case)
    cases = [c for u in list(units.values())[::TABLE_EVERY] for c in u]
    for suite in (condition_cases, soft_delete_cases, dry_run_cases, time_zone_cases,
                  collation_cases):
        cases += [c for c in suite() if not dbt_only(c)][::4]
    return tuple(cases)


def table_wording(excerpt: str) -> str:
    from dbt_merge.render import source_wording

    return source_wording(excerpt, "the source")


class _Stats:
    """What check_invariants reads of a dbt run: the five statistics of the model."""

    def __init__(self, stats: dict):
        self._stats = stats

    def stats(self, model: str) -> dict:
        return self._stats


def call(con, case: Case, mode: str):
    """merge_table with the case's config: (result or None, error text or None)."""
    from dbt_merge.duckdb import MergeError, merge_table

    cfg = case.config(duck_quote)
    cfg.pop("pre_hook", None)
    cfg.pop("post_hook", None)
    key = cfg.pop("unique_key")
    strategy = cfg.pop("strategy")
    source = f"{SCHEMA}_src.{duck_quote('s_' + case.id)}"
    if case.time_zone is not None:
        con.execute(f"set TimeZone = '{case.time_zone}'")
    if case.collation is not None:
        con.execute(f"set session default_collation = '{case.collation}'")
    try:
        result = merge_table(
            con, case.select(source, duck_quote, "random()"),
            f"{SCHEMA + case.schema_suffix}.{case.table}", key, strategy,
            full_refresh=mode == "full_refresh", **cfg,
        )  # fmt: skip
    except MergeError as e:
        return None, str(e)
    except Exception as e:  # noqa: BLE001 - an engine error is a finding, reported as text
        return None, f"{type(e).__name__} (not MergeError): {str(e)[:600]}"
    finally:
        if case.time_zone is not None:
            con.execute("reset TimeZone")
        if case.collation is not None:
            con.execute("reset session default_collation")
    return result, None


def leftovers(con) -> list[str]:
    """Temporary tables and views on the connection, and an open transaction."""
    names = [r[0] for r in con.execute(
        "select table_name from duckdb_tables() where temporary union all "
        "select view_name from duckdb_views() where temporary and not internal").fetchall()]
    try:
        con.begin()
        con.rollback()
    except Exception:  # noqa: BLE001 - DuckDB raises TransactionException
        names.append("(a transaction left open)")
    return names


def check_call(engine, case: Case, mode: str, before, result, error):
    """(what is wrong or None, the table afterwards): merge_dataframe's checks, in merge_table's
    wording, and nothing left behind on the connection."""
    left = leftovers(engine.con)
    problem, after = check_door_call(
        engine, case, mode, before, result, error, "duckdb", table_wording
    )
    return problem or (f"left behind: {left}" if left else None), after


def run_cases(engine: DuckEngine, cases: tuple[Case, ...]) -> list[Failure]:
    engine.setup(SCHEMA, SCHEMA + "_twin", SCHEMA + "_src")
    for case in cases:
        engine.source(SCHEMA + "_src", f"s_{case.id}", case.source_columns, case.source)
        if case.target is None:
            engine.drop(SCHEMA + case.schema_suffix, case.table)
        else:
            engine.create(SCHEMA + case.schema_suffix, case.table, case.target_columns,
                          case.target)
    failures: list[Failure] = []
    state = {c.id: c.initial() for c in cases}
    steps = [("first", None, cases), ("rerun", "run", cases),
             ("refresh", "full_refresh", cases[::4])]
    for step, step_mode, selected in steps:
        for case in selected:
            if any(f.case is case for f in failures):
                continue
            mode = step_mode or case.mode
            result, error = call(engine.con, case, mode)
            problem, state[case.id] = check_call(engine, case, mode, state[case.id], result, error)
            if problem:
                failures.append(Failure(case, step, problem))
    return failures


def test_table_case_mix():
    """The slice meets every strategy, errors and successes, and the options' suites."""
    cases = table_cases()
    assert len(cases) >= 100, len(cases)
    assert {c.strategy for c in cases} == {"upsert", "insert", "update", "full_merge",
                                           "deduplicate"}
    outcomes = [c.outcome(c.mode, c.initial(), "duckdb") for c in cases]
    assert any(o and o.error for o in outcomes) and any(o and o.stats for o in outcomes)
    features = {f for c in cases for f in c.features()}
    assert {"condition:update", "condition:delete", "dry_run", "mode:full_refresh"} <= features
    assert any(c.opts.soft_delete for c in cases) and any(c.time_zone for c in cases)


def test_merge_table_matches_reference(tmp_path):
    cases = only(table_cases())
    with DuckEngine() as engine:
        failures = run_cases(engine, cases)
    finish("duckdb_table", cases, failures, tmp_path, dialect="duckdb")
