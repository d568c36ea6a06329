"""Benchmark data generated inside the engine: a target table and sources against it.

Columns: id (key), customer, amount, category, updated_at. A changed row always changes amount
*and* updated_at (a later updated_at), so `updated_at` differs from the target exactly on the rows
whose values changed. Source shapes (`Increment.shape`):

- `increment`: `rows` rows, half matching target keys spread evenly over the whole target (of
  those, `unchanged` rows are identical to the target row, the rest change), half new keys.
  `duplicates` extra rows repeat matched keys with an older updated_at and a different amount,
  for strategy 'deduplicate' (dedup_order_by='updated_at desc' keeps the increment's row).
- `recent`: as `increment`, but the matched keys are the target's newest (a pipeline appending
  ids and updating recent rows), so its keys lie in a narrow range at the table's end.
- `snapshot`: the whole table again: 1% of its rows changed, 0.1% gone, 0.1% new keys.
- `late`: an increment whose matched rows are 30% *late* (older updated_at than the target's,
  different amount: a conditional upsert must keep the target's row) and 70% newer; half new.
- `cdc`: an increment with an `op` column: matched rows are 30% 'D' (delete the target row) and
  70% 'U' (changed), new keys 'I', plus 2% 'D' rows for keys the target lacks (no-ops).
- `full`: the target's rows themselves (a first load or a full refresh of `rows` rows).
- `changed`: every target row again, every one changed (full_merge replacing the whole table).
"""

from __future__ import annotations

from dataclasses import dataclass

COLUMNS = ("id", "customer", "amount", "category", "updated_at")
KEY = "id"
SHAPES = ("increment", "recent", "snapshot", "late", "cdc", "full", "changed")
#: The `late` and `cdc` shapes: fraction of matched rows that are late / deleted.
LATE = 0.3
CDC_DELETES = 0.3
#: `cdc`: 'D' rows for keys the target does not hold, as a fraction of `rows`.
CDC_STRAY_DELETES = 0.02

#: SQL spellings that differ between the engines.
DIALECTS = {
    "duckdb": {
        "range": "(select range as i from range({n}))",
        "name": "'name_' || cast({x} as varchar)",
        "ts": "(timestamp '2024-01-01 00:00:00' + to_seconds({x}))",
    },
    "spark": {
        "range": "(select id as i from range({n}))",
        "name": "concat('name_', cast({x} as string))",
        "ts": "timestamp_seconds(1704067200 + {x})",
    },
}


@dataclass(frozen=True)
class Increment:
    """One source table: `rows` rows against a target of `target_rows` rows."""

    target_rows: int
    rows: int
    unchanged: float = 0.0
    duplicates: float = 0.0
    shape: str = "increment"

    @property
    def table(self) -> str:
        tag = f"src_{_short(self.target_rows)}_{_short(self.rows)}"
        if self.shape != "increment":
            tag += f"_{self.shape}"
        if self.unchanged:
            tag += f"_unch{round(self.unchanged * 100)}"
        if self.duplicates:
            tag += f"_dup{round(self.duplicates * 100)}"
        return tag

    @property
    def matched(self) -> int:
        return self.rows // 2

    @property
    def label(self) -> str:
        if self.shape == "snapshot":
            return f"{_short(self.target_rows)} snapshot (1% changed, 0.1% new, 0.1% gone)"
        if self.shape == "full":
            return f"{_short(self.rows)} rows"
        if self.shape == "changed":
            return f"{_short(self.target_rows)} target, every row changed"
        if self.shape == "empty":
            return f"{_short(self.target_rows)} target, empty increment (no rows)"
        text = f"{_short(self.target_rows)} target, {_short(self.rows)} increment"
        if self.unchanged:
            text += f", {round(self.unchanged * 100)}% unchanged"
        if self.duplicates:
            text += f", +{round(self.duplicates * 100)}% duplicate keys"
        if self.shape == "late":
            text += f", {round(LATE * 100)}% of matched rows late"
        if self.shape == "recent":
            text += ", the newest keys matched"
        if self.shape == "cdc":
            text += f", CDC: {round(CDC_DELETES * 100)}% of matched rows op='D'"
        return text


def target_table(rows: int) -> str:
    return f"tgt_{_short(rows)}"


def _short(n: int) -> str:
    for unit, size in (("m", 1_000_000), ("k", 1_000)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def _row(engine: str, id_sql: str, amount_delta: str = "0", ts_shift: str = "") -> str:
    d = DIALECTS[engine]
    return (
        f"{id_sql} as id, {d['name'].format(x=id_sql)} as customer, "
        f"cast(({id_sql}) % 1000 as double) + {amount_delta} as amount, "
        f"cast(({id_sql}) % 97 as integer) as category, "
        f"{d['ts'].format(x=id_sql)}{ts_shift} as updated_at"
    )


def _changed(engine: str, id_sql: str) -> str:
    return _row(engine, id_sql, "1", " + interval 1 day")


def _older(engine: str, id_sql: str) -> str:
    return _row(engine, id_sql, "-5", " - interval 1 day")


def target_select(engine: str, rows: int) -> str:
    """SELECT of a pristine target with keys 0 .. rows-1."""
    return f"select {_row(engine, 'i')} from {DIALECTS[engine]['range'].format(n=rows)} as r"


def increment_select(engine: str, inc: Increment) -> str:
    """SELECT of a source of the given shape (see the module docstring)."""
    return {
        "increment": _increment,
        "recent": _increment,
        "snapshot": _snapshot,
        "late": _late,
        "cdc": _cdc,
        "full": lambda e, i: target_select(e, i.rows),
        "changed": _every_row_changed,
        "empty": lambda e, i: target_select(e, 0),
    }[inc.shape](engine, inc)


def _increment(engine: str, inc: Increment) -> str:
    rng = DIALECTS[engine]["range"]
    stride = inc.target_rows // inc.matched
    unchanged = round(inc.rows * inc.unchanged)
    dups = round(inc.rows * inc.duplicates)
    # `recent`: the matched keys are the table's newest (a pipeline that appends ids and updates
    # recent rows); else spread over the whole table
    key = f"({inc.target_rows - inc.matched} + i)" if inc.shape == "recent" else f"(i * {stride})"
    changed = f"i >= {unchanged}"
    parts = [
        f"select {_row(engine, key)} from {rng.format(n=inc.matched)} as r where not ({changed})",
        f"select {_changed(engine, key)} from {rng.format(n=inc.matched)} as r where {changed}",
        f"select {_row(engine, f'({inc.target_rows} + i)')}"
        f" from {rng.format(n=inc.rows - inc.matched)} as r",
    ]
    if dups:
        parts.append(f"select {_older(engine, key)} from {rng.format(n=dups)} as r")
    return "\nunion all\n".join(parts)


def _snapshot(engine: str, inc: Increment) -> str:
    """Every target key but the gone ones (i % 1000 = 1); i % 100 = 0 changed; 0.1% new keys."""
    rng = DIALECTS[engine]["range"]
    n = inc.target_rows
    return (
        f"select {_row(engine, 'i')} from {rng.format(n=n)} as r"
        " where i % 100 <> 0 and i % 1000 <> 1"
        f"\nunion all\nselect {_changed(engine, 'i')} from {rng.format(n=n)} as r where i % 100 = 0"
        f"\nunion all\nselect {_row(engine, f'({n} + i)')} from {rng.format(n=n // 1000)} as r"
    )


def _every_row_changed(engine: str, inc: Increment) -> str:
    rng = DIALECTS[engine]["range"]
    return f"select {_changed(engine, 'i')} from {rng.format(n=inc.target_rows)} as r"


def _late(engine: str, inc: Increment) -> str:
    rng = DIALECTS[engine]["range"]
    stride = inc.target_rows // inc.matched
    key = f"(i * {stride})"
    late = f"i % 10 < {round(LATE * 10)}"
    return (
        f"select {_older(engine, key)} from {rng.format(n=inc.matched)} as r where {late}"
        f"\nunion all\nselect {_changed(engine, key)} from {rng.format(n=inc.matched)} as r"
        f" where not ({late})"
        f"\nunion all\nselect {_row(engine, f'({inc.target_rows} + i)')}"
        f" from {rng.format(n=inc.rows - inc.matched)} as r"
    )


def _cdc(engine: str, inc: Increment) -> str:
    rng = DIALECTS[engine]["range"]
    stride = inc.target_rows // inc.matched
    key = f"(i * {stride})"
    deleted = f"i % 10 < {round(CDC_DELETES * 10)}"
    new = inc.rows - inc.matched
    stray = round(inc.rows * CDC_STRAY_DELETES)
    return (
        f"select {_row(engine, key)}, 'D' as op from {rng.format(n=inc.matched)} as r"
        f" where {deleted}"
        f"\nunion all\nselect {_changed(engine, key)}, 'U' as op"
        f" from {rng.format(n=inc.matched)} as r where not ({deleted})"
        f"\nunion all\nselect {_row(engine, f'({inc.target_rows} + i)')}, 'I' as op"
        f" from {rng.format(n=new)} as r"
        f"\nunion all\nselect {_row(engine, f'({inc.target_rows + new} + i)')}, 'D' as op"
        f" from {rng.format(n=stray)} as r"
    )
