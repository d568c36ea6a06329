"""Hand-written SQL for the effect of each strategy, run directly on the engine.

These do no validation (NULL or duplicate keys) and count no statistics. Each entry is a list of
statements run in one transaction (DuckDB) or one after another (Spark, where each statement is
its own Iceberg commit). Several formulations per strategy, the fastest seen first: by default
the benchmark runs only that one (`--all-formulations` runs them all and reports the fastest).
"""

from __future__ import annotations

from .data import COLUMNS, KEY

NON_KEY = [c for c in COLUMNS if c != KEY]
COLS = ", ".join(COLUMNS)
SET_ALL = ", ".join(f"{c} = s.{c}" for c in NON_KEY)
VALUES = ", ".join(f"s.{c}" for c in COLUMNS)


def _dedup(src: str, engine: str) -> str:
    window = f"row_number() over (partition by {KEY} order by updated_at desc nulls last)"
    if engine == "duckdb":
        return f"(select * from {src} qualify {window} = 1)"
    return f"(select {COLS} from (select *, {window} as rn from {src}) as ranked where rn = 1)"


def _merge(t: str, s: str, matched: bool, insert: bool, delete: bool = False) -> str:
    sql = f"merge into {t} as t using {s} as s on t.{KEY} = s.{KEY}"
    if matched:
        sql += f" when matched then update set {SET_ALL}"
    if insert:
        sql += f" when not matched then insert ({COLS}) values ({VALUES})"
    if delete:
        sql += " when not matched by source then delete"
    return sql


def duckdb_baselines(strategy: str, t: str, s: str) -> dict[str, list[str]]:
    """Formulations for DuckDB: target table t, source relation s."""
    in_src = f"{KEY} in (select {KEY} from {s})"
    if strategy == "deduplicate":
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
            "MERGE INTO": [_merge(t, s, True, True, delete=True)],
        },
    }[strategy]


def spark_baselines(strategy: str, t: str, s: str) -> dict[str, list[str]]:
    """Formulations for Spark + Iceberg: target table t, source relation s."""
    if strategy == "deduplicate":
        return {"MERGE INTO(dedup)": [_merge(t, _dedup(s, "spark"), True, True)]}
    return {
        "upsert": {"MERGE INTO": [_merge(t, s, True, True)]},
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
    }[strategy]
