"""A small, obviously-correct model of the `merge` materialization on plain rows.

Rows are dicts (column -> value). `None` is SQL NULL. Two values are "the same" when both are
NULL, both are NaN, or they compare equal (so 0.0 and -0.0 are the same, as in SQL).

    merge(strategy, source, target, key, ...) -> (rows after, stats)

Target rows whose key has a NULL are kept and never matched (see merge()).
`target=None` means the table does not exist yet (first run): it is built from the checked,
deduplicated source and every row counts as inserted. Bad source rows raise MergeError before
anything is "written", with `kind` one of: null_key, duplicate_key, dedup_tie, dedup_differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

Row = dict[str, Any]

STRATEGIES = {
    #              matched,  source-only, target-only, dedupe
    "upsert": ("update", "insert", "keep", False),
    "insert": ("keep", "insert", "keep", False),
    "update": ("update", "skip", "keep", False),
    "full_merge": ("update", "insert", "delete", False),
    "deduplicate": ("update", "insert", "keep", True),
}


class MergeError(Exception):
    def __init__(self, kind: str, detail: str = ""):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


@dataclass
class Stats:
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    total: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class OrderTerm:
    column: str
    descending: bool = False


@dataclass
class Options:
    update_columns: list[str] | None = None  # merge_update_columns
    exclude_columns: list[str] = field(default_factory=list)  # merge_exclude_columns
    dedup_order_by: list[OrderTerm] = field(default_factory=list)
    # incremental_predicates, as `DBT_INTERNAL_DEST.<column> >= <value>` (int column)
    predicate: tuple[str, int] | None = None

    def in_scope(self, target_row: Row) -> bool:
        """Is a target row inside incremental_predicates (NULL compares false)?"""
        if self.predicate is None:
            return True
        column, value = self.predicate
        return target_row[column] is not None and target_row[column] >= value


def same(a: Any, b: Any) -> bool:
    """NULL-safe equality (NULL = NULL, NaN = NaN)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def value_token(v: Any) -> tuple:
    """A hashable, sortable stand-in for a value under `same` (for grouping and sorting rows)."""
    if v is None:
        return (0,)
    if isinstance(v, bool):
        return (1, int(v))
    if isinstance(v, float):
        if math.isnan(v):
            return (3, "nan")
        return (2, v + 0.0)  # -0.0 + 0.0 == 0.0
    return (4, type(v).__name__, v)


def row_token(row: Row, columns: list[str]) -> tuple:
    return tuple(value_token(row[c]) for c in columns)


def _order_value(v: Any, descending: bool) -> tuple:
    """Sort key for one dedup_order_by term: NULLs last in both directions."""
    if v is None:
        return (1, 0)
    if descending:
        return (0, _Reversed(v))
    return (0, v)


class _Reversed:
    def __init__(self, v: Any):
        self.v = v

    def __lt__(self, other: _Reversed) -> bool:
        return other.v < self.v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and other.v == self.v


def update_columns(columns: list[str], key: list[str], opts: Options) -> list[str]:
    non_key = [c for c in columns if c not in key]
    if opts.update_columns is not None:
        return [c for c in non_key if c in opts.update_columns]
    return [c for c in non_key if c not in opts.exclude_columns]


def check_and_dedupe(strategy: str, source: list[Row], key: list[str], opts: Options) -> list[Row]:
    """The source as it will be merged: one row per key, or MergeError."""
    columns = list(source[0]) if source else []
    for k in key:
        nulls = sum(1 for r in source if r[k] is None)
        if nulls:
            raise MergeError("null_key", f"{k} NULL in {nulls} rows")
    groups: dict[tuple, list[Row]] = {}
    for r in source:
        groups.setdefault(tuple(value_token(r[k]) for k in key), []).append(r)
    dedupe = STRATEGIES[strategy][3]
    chosen = []
    for kt, rows in groups.items():
        if len(rows) == 1:
            chosen.append(rows[0])
            continue
        if not dedupe:
            raise MergeError("duplicate_key", repr(kt))
        if opts.dedup_order_by:

            def order(r: Row) -> tuple:
                return tuple(_order_value(r[t.column], t.descending) for t in opts.dedup_order_by)

            best = min(rows, key=order)
            first = [r for r in rows if order(r) == order(best)]
        else:
            first = rows
        variants = {row_token(r, columns) for r in first}
        if len(variants) > 1:
            raise MergeError("dedup_tie" if opts.dedup_order_by else "dedup_differ", repr(kt))
        chosen.append(first[0])
    return chosen


def merge(
    strategy: str,
    source: list[Row],
    target: list[Row] | None,
    key: list[str],
    opts: Options | None = None,
) -> tuple[list[Row], Stats]:
    opts = opts or Options()
    matched_action, source_only, target_only, _ = STRATEGIES[strategy]
    rows = check_and_dedupe(strategy, source, key, opts)
    if target is None:
        return [dict(r) for r in rows], Stats(inserted=len(rows), total=len(rows))

    columns = list(target[0]) if target else (list(source[0]) if source else [])
    upd = update_columns(columns, key, opts) if matched_action == "update" else []
    # A target row with a NULL key can match no source row (source keys are never NULL), and
    # incremental_predicates hide the rows they exclude: such rows are outside the merge, kept
    # as they are by every strategy and not counted.
    by_key = {
        tuple(value_token(t[k]) for k in key): i
        for i, t in enumerate(target)
        if all(t[k] is not None for k in key) and opts.in_scope(t)
    }
    out: list[Row | None] = [dict(t) for t in target]
    stats = Stats()
    seen = set()
    inserts = []
    for r in rows:
        kt = tuple(value_token(r[k]) for k in key)
        if kt in by_key:
            seen.add(kt)
            t = out[by_key[kt]]
            if any(not same(r[c], t[c]) for c in upd):
                for c in upd:
                    t[c] = r[c]
                stats.updated += 1
            else:
                stats.unchanged += 1
        elif source_only == "insert":
            inserts.append({c: r.get(c) for c in columns})
            stats.inserted += 1
    if target_only == "delete":
        for kt, i in by_key.items():
            if kt not in seen:
                out[i] = None
                stats.deleted += 1
    result = [r for r in out if r is not None] + inserts
    stats.total = len(result)
    return result, stats


def canonical(rows: list[Row], columns: list[str]) -> list[tuple]:
    """Rows as a sorted list of value tokens: equal lists mean equal tables (as multisets)."""
    return sorted((row_token(r, columns) for r in rows), key=repr)
