"""Benchmark data generated inside the engine: a target table and increments against it.

Columns: id (key), customer, amount, category, updated_at. An increment has `rows` rows:
half match target keys spread evenly over the whole target (of those, `unchanged` rows are
identical to the target row, the rest change amount and updated_at), half are new keys.
`duplicates` extra rows repeat matched keys with an older updated_at and a different amount,
for strategy 'deduplicate' (dedup_order_by='updated_at desc' keeps the increment's row).
"""

from __future__ import annotations

from dataclasses import dataclass

COLUMNS = ("id", "customer", "amount", "category", "updated_at")
KEY = "id"

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

    @property
    def table(self) -> str:
        tag = f"src_{_short(self.target_rows)}_{_short(self.rows)}"
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
        text = f"{_short(self.target_rows)} target, {_short(self.rows)} increment"
        if self.unchanged:
            text += f", {round(self.unchanged * 100)}% unchanged"
        if self.duplicates:
            text += f", +{round(self.duplicates * 100)}% duplicate keys"
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


def target_select(engine: str, rows: int) -> str:
    """SELECT of a pristine target with keys 0 .. rows-1."""
    return f"select {_row(engine, 'i')} from {DIALECTS[engine]['range'].format(n=rows)} as r"


def increment_select(engine: str, inc: Increment) -> str:
    """SELECT of an increment (see the module docstring)."""
    d = DIALECTS[engine]
    stride = inc.target_rows // inc.matched
    unchanged = round(inc.rows * inc.unchanged)
    dups = round(inc.rows * inc.duplicates)
    key = f"(i * {stride})"
    changed = f"i >= {unchanged}"
    parts = [
        f"select {_row(engine, key)}"
        f" from {d['range'].format(n=inc.matched)} as r where not ({changed})",
        f"select {_row(engine, key, '1', ' + interval 1 day')}"
        f" from {d['range'].format(n=inc.matched)} as r where {changed}",
        f"select {_row(engine, f'({inc.target_rows} + i)')}"
        f" from {d['range'].format(n=inc.rows - inc.matched)} as r",
    ]
    if dups:
        parts.append(
            f"select {_row(engine, key, '-5', ' - interval 1 day')}"
            f" from {d['range'].format(n=dups)} as r"
        )
    return "\nunion all\n".join(parts)
