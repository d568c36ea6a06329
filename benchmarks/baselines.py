"""Hand-written SQL for the effect of each strategy, run directly on the engine.

These do no validation (NULL or duplicate keys) and count no statistics. Each entry is a list of
statements run in one transaction (DuckDB) or one after another (Spark, where each statement is
its own Iceberg commit). Several formulations per effect, the fastest seen first: by default
the benchmark runs only that one (`--all-formulations` runs them all), unless a workload names
the ones it compares (the snapshot load runs three).

Effects beyond the five strategies: `upsert_if_newer` (an upsert whose matched rows are updated
only when the source's updated_at is later), `cdc` (an upsert where a source row with
op = 'D' deletes the target row with its key and is never inserted) and `load` (build the
table from the SELECT: a first load or a full refresh).
"""

from __future__ import annotations

from .data import COLUMNS, KEY

NON_KEY = [c for c in COLUMNS if c != KEY]
COLS = ", ".join(COLUMNS)
SET_ALL = ", ".join(f"{c} = s.{c}" for c in NON_KEY)
VALUES = ", ".join(f"s.{c}" for c in COLUMNS)
#: A matched row is unchanged when every non-key column is equal, NULLs equal.
DIFFERS = " or ".join(f"t.{c} is distinct from s.{c}" for c in NON_KEY)
NEWER = "s.updated_at > t.updated_at"
DELETE_OP = "s.op = 'D'"


def _dedup(src: str, engine: str) -> str:
    window = f"row_number() over (partition by {KEY} order by updated_at desc nulls last)"
    if engine == "duckdb":
        return f"(select * from {src} qualify {window} = 1)"
    return f"(select {COLS} from (select *, {window} as rn from {src}) as ranked where rn = 1)"


def _merge(
    t: str,
    s: str,
    matched: bool,
    insert: bool,
    delete: bool = False,
    matched_if: str = "",
    delete_if: str = "",
) -> str:
    sql = f"merge into {t} as t using {s} as s on t.{KEY} = s.{KEY}"
    if delete_if:
        sql += f" when matched and {delete_if} then delete"
    if matched:
        sql += (
            f" when matched{f' and {matched_if}' if matched_if else ''} then update set {SET_ALL}"
        )
    if insert:
        insert_if = f" and not ({delete_if})" if delete_if else ""
        sql += f" when not matched{insert_if} then insert ({COLS}) values ({VALUES})"
    if delete:
        sql += " when not matched by source then delete"
    return sql


def _delete_insert_of(t: str, s: str, where: str) -> list[str]:
    """Delete and re-insert only the source rows meeting `where` (aliases s, and t left-joined)."""
    return [
        f"create or replace temp table bench_rows as select s.* from {s} as s"
        f" left join {t} as t on t.{KEY} = s.{KEY} where {where}",
        f"delete from {t} where {KEY} in (select {KEY} from bench_rows)",
        f"insert into {t} select {COLS} from bench_rows",
        "drop table bench_rows",
    ]


def duckdb_baselines(effect: str, t: str, s: str) -> dict[str, list[str]]:
    """Formulations for DuckDB: target table t, source relation s."""
    in_src = f"{KEY} in (select {KEY} from {s})"
    if effect == "deduplicate":
        d = _dedup(s, "duckdb")
        return {
            "delete+insert(dedup)": [
                f"delete from {t} where {in_src}",
                f"insert into {t} select * from {d}",
            ],
            "MERGE INTO(dedup)": [_merge(t, d, True, True)],
        }
    return {
        "upsert": {
            "delete+insert": [
                f"delete from {t} where {in_src}",
                f"insert into {t} select * from {s}",
            ],
            "MERGE INTO": [_merge(t, s, True, True)],
            "skip-unchanged": _delete_insert_of(t, s, f"t.{KEY} is null or {DIFFERS}"),
            "skip-unchanged(updated_at)": _delete_insert_of(
                t, s, f"t.{KEY} is null or t.updated_at is distinct from s.updated_at"
            ),
        },
        "insert": {
            "INSERT anti-join": [
                f"insert into {t} select * from {s} as s"
                f" where not exists (select 1 from {t} as t where t.{KEY} = s.{KEY})"
            ],
            "MERGE INTO": [_merge(t, s, False, True)],
        },
        "update": {
            "delete+insert(matched)": [
                f"create or replace temp table bench_matched as select * from {s} as s"
                f" where exists (select 1 from {t} as t where t.{KEY} = s.{KEY})",
                f"delete from {t} where {KEY} in (select {KEY} from bench_matched)",
                f"insert into {t} select * from bench_matched",
                "drop table bench_matched",
            ],
            "UPDATE FROM": [f"update {t} as t set {SET_ALL} from {s} as s where t.{KEY} = s.{KEY}"],
            "MERGE INTO": [_merge(t, s, True, False)],
        },
        "full_merge": {
            "delete all+insert": [f"delete from {t}", f"insert into {t} select * from {s}"],
            "replace-all": [f"create or replace table {t} as select * from {s}"],
            "MERGE INTO": [_merge(t, s, True, True, delete=True)],
        },
        "upsert_if_newer": {
            "delete+insert(newer)": _delete_insert_of(t, s, f"t.{KEY} is null or {NEWER}"),
            "MERGE INTO": [_merge(t, s, True, True, matched_if=NEWER)],
        },
        "cdc": {
            "delete+insert(op)": [
                f"delete from {t} where {in_src}",
                f"insert into {t} select {COLS} from {s} as s where not ({DELETE_OP})",
            ],
            "MERGE INTO": [_merge(t, s, True, True, delete_if=DELETE_OP)],
        },
        "load": {"create table as": [f"create or replace table {t} as select * from {s}"]},
    }[effect]


def spark_baselines(effect: str, t: str, s: str) -> dict[str, list[str]]:
    """Formulations for Spark + Iceberg: target table t, source relation s."""
    if effect == "deduplicate":
        return {"MERGE INTO(dedup)": [_merge(t, _dedup(s, "spark"), True, True)]}
    return {
        "upsert": {
            "MERGE INTO": [_merge(t, s, True, True)],
            # dbt-spark's merge, but a matched row left as it is when no column differs
            "MERGE INTO(skip unchanged)": [_merge(t, s, True, True, matched_if=f"({DIFFERS})")],
        },
        "insert": {
            "INSERT anti-join": [
                f"insert into {t} select s.* from {s} as s"
                f" left anti join {t} as t on s.{KEY} = t.{KEY}"
            ],
            "MERGE INTO": [_merge(t, s, False, True)],
        },
        "update": {"MERGE INTO": [_merge(t, s, True, False)]},
        "full_merge": {
            "INSERT OVERWRITE": [f"insert overwrite {t} select * from {s}"],
            "MERGE INTO": [_merge(t, s, True, True, delete=True)],
        },
        "upsert_if_newer": {"MERGE INTO": [_merge(t, s, True, True, matched_if=NEWER)]},
        "cdc": {"MERGE INTO": [_merge(t, s, True, True, delete_if=DELETE_OP)]},
    }[effect]


def formulations(engine: str, effect: str, t: str, s: str) -> dict[str, list[str]]:
    return (duckdb_baselines if engine == "duckdb" else spark_baselines)(effect, t, s)
