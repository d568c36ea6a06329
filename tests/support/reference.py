"""A small, obviously-correct model of the `merge` materialization on plain rows.

Rows are dicts (column -> value). `None` is SQL NULL. Two values are "the same" when both are
NULL, both are NaN, or they compare equal (so 0.0 and -0.0 are the same, as in SQL).

    merge(strategy, source, target, key, opts, types=..., engine=...) -> (rows after, stats)

`target=None` means the table does not exist yet (first run, or --full-refresh): it is built
from the checked, deduplicated source and every row counts as inserted. Otherwise the rules
are those of issue 10 (the lead's SEMANTICS_10.md, section numbers below):

- §4 the SELECT's values are converted to the target's column types as the engine stores them
  (coltypes.convert); keys are matched and checked for uniqueness, and value columns compared
  for change detection, on the converted values; a key or value the target cannot store fails
  the run (main's README: values too);
- §5 a SELECT key matching more than one considered target row fails the run; duplicate target
  keys the SELECT does not contain are left alone (full_merge deletes and counts each row);
- §6 a key found only outside incremental_predicates fails the run for the inserting strategies
  unless on_key_outside_predicates='insert' (then it is inserted again);
- §2 full_merge refuses to delete more than max_delete_fraction (default 0.5) of the considered
  target rows.

Soft deletes (docs/configuration.md): a delete sets soft_delete_column true and keeps the row (a
row already soft-deleted is neither deleted again nor counted; one matched by a deleting SELECT
row counts as unchanged); the column is always updated and compared, so a matched soft-deleted
row comes back live (updated); the mass-delete guard counts live rows only.

"Considered" target rows have no NULL key and satisfy incremental_predicates; the others are
kept as they are by every strategy and never counted. Bad input raises MergeError before
anything is "written". Its `kinds` are every error the input deserves at the first check stage
that fails (STAGES): the package may report any one of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .coltypes import ConversionError, convert, family, zone_kind

Row = dict[str, Any]

STRATEGIES = {
    #              matched,  source-only, target-only, dedupe
    "upsert": ("update", "insert", "keep", False),
    "insert": ("keep", "insert", "keep", False),
    "update": ("update", "skip", "keep", False),
    "full_merge": ("update", "insert", "delete", False),
    "deduplicate": ("update", "insert", "keep", True),
}

# Error kinds in the order the checks run; kinds of one stage may be reported in any order.
STAGES = [
    ["config_max_delete_fraction", "config_on_key_outside"],  # config, before any SQL
    ["key_type", "time_zone"],  # then the SELECT's rows: storable, keys not NULL, then unique
    ["key_conversion", "value_conversion", "null_key"],
    ["duplicate_key", "dedup_tie", "dedup_differ"],
    ["target_duplicate_key", "key_outside_predicates", "mass_delete"],
]
DEFAULT_MAX_DELETE_FRACTION = 0.5


class MergeError(Exception):
    def __init__(self, kind: str, detail: str = "", also: tuple[str, ...] = ()):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.kinds = (kind, *also)


@dataclass
class Stats:
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    total: int = 0
    held_back: int = 0  # merge_update_condition: the sixth number, after the total

    def as_dict(self) -> dict[str, int]:
        """The five numbers every run reports."""
        return {k: v for k, v in self.__dict__.items() if k != "held_back"}


@dataclass(frozen=True)
class OrderTerm:
    column: str
    descending: bool = False


@dataclass
class Options:
    update_columns: list[str] | None = None  # merge_update_columns
    exclude_columns: list[str] = field(default_factory=list)  # merge_exclude_columns
    dedup_order_by: list[OrderTerm] = field(default_factory=list)
    # incremental_predicates, as `DBT_INTERNAL_DEST.<column> >= <value>` (a numeric column)
    predicate: tuple[str, int] | None = None
    on_key_outside: Any = None  # on_key_outside_predicates; None: not set
    max_delete_fraction: Any = None  # None: not set (the default applies)
    check_columns: list[str] | None = None  # merge_check_columns
    detect_unchanged: bool | None = None  # None: not set (true)
    # merge_update_condition `DBT_INTERNAL_SOURCE.<c> > DBT_INTERNAL_DEST.<c>`: the column c
    update_condition: str | None = None
    # delete_condition `DBT_INTERNAL_SOURCE.<c> = <v>`: (c, v)
    delete_condition: tuple[str, int] | None = None
    # soft_delete_column: a boolean column of the SELECT and the table (full_merge, or with
    # delete_condition): a delete sets it true instead of removing the row
    soft_delete: str | None = None

    def live(self, target_row: Row) -> bool:
        """Not soft-deleted (NULL counts as live); every row without soft deletes."""
        return self.soft_delete is None or target_row[self.soft_delete] is not True

    def updates(self, source_row: Row, target_row: Row) -> bool:
        """merge_update_condition on a matched, changed row (NULL compares false)."""
        if self.update_condition is None:
            return True
        a, b = source_row[self.update_condition], target_row[self.update_condition]
        return a is not None and b is not None and a > b

    def deletes(self, source_row: Row) -> bool:
        """delete_condition on a SELECT row (NULL compares false)."""
        if self.delete_condition is None:
            return False
        column, value = self.delete_condition
        return source_row[column] is not None and source_row[column] == value

    def in_scope(self, target_row: Row) -> bool:
        """Is a target row inside incremental_predicates (NULL compares false)?"""
        if self.predicate is None:
            return True
        column, value = self.predicate
        return target_row[column] is not None and target_row[column] >= value


class Unknown:
    """A value the reference cannot predict (a column computed by random()): it differs from
    every other value, itself included, so a row holding one always counts as changed."""

    def __repr__(self) -> str:
        return "<unknown>"


def same(a: Any, b: Any) -> bool:
    """NULL-safe equality (NULL = NULL, NaN = NaN)."""
    if isinstance(a, Unknown) or isinstance(b, Unknown):
        return False
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
    if isinstance(v, Unknown):
        return (5, id(v))
    return (4, type(v).__name__, v)


def row_token(row: Row, columns: list[str]) -> tuple:
    """The row's value tokens: values as stored, compared byte for byte (a text column's
    collation plays no part, as in the merge)."""
    return tuple(value_token(row[c]) for c in columns)


def _order_value(v: Any, descending: bool) -> tuple:
    """Sort key for one dedup_order_by term: NULLs last in both directions, NaN above every
    other number (§8)."""
    if v is None:
        return (1, 0)
    if isinstance(v, float):
        v = (1, 0.0) if math.isnan(v) else (0, v + 0.0)
    return (0, _Reversed(v) if descending else v)


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


def config_errors(strategy: str, opts: Options) -> list[str]:
    kinds = []
    mdf = opts.max_delete_fraction
    if mdf is not None and (
        isinstance(mdf, bool) or not isinstance(mdf, int | float) or not 0 <= mdf <= 1
    ):
        kinds.append("config_max_delete_fraction")
    if opts.on_key_outside not in (None, "fail", "insert"):
        kinds.append("config_on_key_outside")
    return kinds


def _raise_first_stage(kinds: list[str], detail: str = "") -> None:
    for stage in STAGES:
        found = [k for k in stage if k in kinds]
        if found:
            raise MergeError(found[0], detail, tuple(found[1:]))


def _key_groups(
    rows: list[Row], key: list[str], types: dict[str, str] | None = None
) -> dict[tuple, list[Row]]:
    groups: dict[tuple, list[Row]] = {}
    for r in rows:
        groups.setdefault(row_token(r, key), []).append(r)
    return groups


def dedupe_errors(strategy: str, rows: list[Row], key: list[str], opts: Options, types=None):
    """(one row per key, error kinds): duplicate keys, or deduplicate's ties and differences."""
    columns = list(rows[0]) if rows else []
    dedupe = STRATEGIES[strategy][3]
    chosen, kinds = [], []
    for group in _key_groups(rows, key, types).values():
        first = group
        if len(group) > 1 and not dedupe:
            kinds.append("duplicate_key")
        elif len(group) > 1 and opts.dedup_order_by:

            def order(r: Row) -> tuple:
                return tuple(_order_value(r[t.column], t.descending) for t in opts.dedup_order_by)

            best = min(group, key=order)
            first = [r for r in group if order(r) == order(best)]
        if len({row_token(r, columns) for r in first}) > 1 and dedupe:
            kinds.append("dedup_tie" if opts.dedup_order_by else "dedup_differ")
        chosen.append(first[0])
    return chosen, kinds


def check_and_dedupe(strategy: str, source: list[Row], key: list[str], opts: Options) -> list[Row]:
    """The source as it will be merged: one row per key, or MergeError."""
    kinds = config_errors(strategy, opts)
    kinds += ["null_key" for k in key if any(r[k] is None for r in source)]
    if not kinds:
        rows, kinds = dedupe_errors(strategy, source, key, opts)
    _raise_first_stage(kinds)
    return rows


def type_errors(key: list[str], types: dict[str, tuple[str, str]]) -> list[str]:
    """Errors of the column types alone ({column: (SELECT type, target type)}), checked before
    any row is read (so also with --empty): a key of another type family, an instant against a
    wall-clock time (key or value)."""
    kinds = [
        "key_type"
        for k in key
        if k in types
        and "other" not in {family(types[k][0]), family(types[k][1])}
        and family(types[k][0]) != family(types[k][1])
    ]
    return kinds + [
        "time_zone"
        for src, tgt in types.values()
        if {zone_kind(src), zone_kind(tgt)} == {"instant", "wall_clock"}
    ]


def merge(
    strategy: str,
    source: list[Row],
    target: list[Row] | None,
    key: list[str],
    opts: Options | None = None,
    *,
    types: dict[str, tuple[str, str]] | None = None,
    engine: str = "duckdb",
) -> tuple[list[Row], Stats]:
    """`types`: column -> (type in the SELECT, type in the target); None: the same types."""
    opts = opts or Options()
    if target is None:  # a first build: rows delete_condition marks delete nothing, load nothing
        rows = [r for r in check_and_dedupe(strategy, source, key, opts) if not opts.deletes(r)]
        return [dict(r) for r in rows], Stats(inserted=len(rows), total=len(rows))

    columns = list(target[0]) if target else (list(source[0]) if source else [])
    types = types or {}
    stored = {c: types[c][1] for c in types}  # the target's types
    kinds = config_errors(strategy, opts) + type_errors(key, types)
    _raise_first_stage(kinds)

    # §4: the SELECT as the target would store it. Values that do not fit fail the run.
    kinds += ["null_key" for k in key if any(r[k] is None for r in source)]
    converted = []
    for r in source:
        failed = [c for c, v in r.items() if c in types and _fails(v, types[c], engine)]
        kinds += ["key_conversion" if c in key else "value_conversion" for c in failed]
        if not failed:
            converted.append({c: convert(v, *types[c], engine) if c in types else v
                              for c, v in r.items()})  # fmt: skip
    rows, dedupe_kinds = dedupe_errors(strategy, converted, key, opts, stored)
    kinds += dedupe_kinds
    _raise_first_stage(kinds)

    matched_action, source_only, target_only, _ = STRATEGIES[strategy]
    upd = update_columns(columns, key, opts) if matched_action == "update" else []
    # a matched row is changed when one of these differs (merge_check_columns: any non-key
    # column, updated or not), or always (detect_unchanged=false); never without update columns
    check = upd if opts.check_columns is None else list(opts.check_columns)
    if opts.soft_delete and matched_action == "update":  # always updated and compared
        upd = upd + [opts.soft_delete] * (opts.soft_delete not in upd)
        check = check + [opts.soft_delete] * (opts.soft_delete not in check)
    considered: dict[tuple, list[int]] = {}
    outside: set[tuple] = set()
    for i, t in enumerate(target):
        if any(t[k] is None for k in key):
            continue  # a NULL key can match no source row: kept, not counted
        kt = row_token(t, key)
        if opts.in_scope(t):
            considered.setdefault(kt, []).append(i)
        else:
            outside.add(kt)
    source_keys = {row_token(r, key) for r in rows}
    for kt in source_keys:
        hits = considered.get(kt, [])
        if len(hits) > 1:
            kinds.append("target_duplicate_key")
        elif not hits and source_only == "insert" and kt in outside:
            if opts.on_key_outside != "insert":
                kinds.append("key_outside_predicates")
    if target_only == "delete":
        n_considered = sum(opts.live(target[i]) for v in considered.values() for i in v)
        doomed = sum(opts.live(target[i]) for kt, v in considered.items() if kt not in source_keys
                     for i in v)
        # rows delete_condition deletes count against max_delete_fraction too
        doomed += sum(1 for r in rows if opts.deletes(r) and (
            hits := considered.get(row_token(r, key))) and opts.live(target[hits[0]]))
        limit = opts.max_delete_fraction
        limit = DEFAULT_MAX_DELETE_FRACTION if limit is None else limit
        if doomed > 0 and doomed > limit * n_considered:
            kinds.append("mass_delete")
    _raise_first_stage(kinds)

    out: list[Row | None] = [dict(t) for t in target]
    stats = Stats()
    inserts = []
    for r in rows:
        hits = considered.get(row_token(r, key), [])
        if opts.deletes(r):  # deletes the row of its key, if any; never inserted
            if hits and not opts.live(out[hits[0]]):
                stats.unchanged += 1  # soft-deleted already
            elif hits and opts.soft_delete:
                out[hits[0]][opts.soft_delete] = True
                stats.deleted += 1
            elif hits:
                out[hits[0]] = None
                stats.deleted += 1
            continue
        if hits:
            t = out[hits[0]]
            # no update column (all excluded): nothing can be written, the row is unchanged
            if upd and (opts.detect_unchanged is False or any(
                not same(r[c], t[c]) for c in check
            )):
                if not opts.updates(r, t):
                    stats.held_back += 1  # changed, but the condition keeps it as it is
                    continue
                for c in upd:
                    t[c] = r[c]
                stats.updated += 1
            else:
                stats.unchanged += 1
        elif source_only == "insert":
            inserts.append({c: r.get(c) for c in columns})
            stats.inserted += 1
    if target_only == "delete":
        for kt, hits in considered.items():
            if kt not in source_keys:
                for i in hits:
                    if not opts.live(out[i]):
                        continue  # soft-deleted already: not deleted again, not counted
                    if opts.soft_delete:
                        out[i][opts.soft_delete] = True
                    else:
                        out[i] = None
                    stats.deleted += 1
    result = [r for r in out if r is not None] + inserts
    stats.total = len(result)
    return result, stats


def _fails(value, pair: tuple[str, str], engine: str) -> bool:
    try:
        convert(value, *pair, engine)
    except ConversionError:
        return True
    return False


def canonical(rows: list[Row], columns: list[str]) -> list[tuple]:
    """Rows as a sorted list of value tokens: equal lists mean equal tables (as multisets)."""
    return sorted((row_token(r, columns) for r in rows), key=repr)


# ------------------------------------------------------------------ strategy='history'
# dbt snapshots' semantics with the package's checks (docs/history.md). The run's time is a
# RunTime (later than every time the sources hold, and later for a later run); what the table
# holds for it is mapped back by the tests. dbt_scd_id is a ScdId: the parts whose md5 it is.

HISTORY_MODES = ("ignore", "invalidate", "new_record")
META = ("dbt_scd_id", "dbt_updated_at", "dbt_valid_from", "dbt_valid_to", "dbt_is_deleted")


#: source times from this year on are later than any run's time (the tests' "future" rows)
FUTURE_YEAR = 2090


@dataclass(frozen=True)
class RunTime:
    """The time of run `n` of a sequence: after earlier runs, and after every source time
    before FUTURE_YEAR (and before every one from then on)."""

    n: int

    def __lt__(self, other):
        if isinstance(other, RunTime):
            return self.n < other.n
        return other.year >= FUTURE_YEAR

    def __gt__(self, other):
        if isinstance(other, RunTime):
            return self.n > other.n
        return other.year < FUTURE_YEAR

    def __le__(self, other):
        return self == other or self < other

    def __ge__(self, other):
        return self == other or self > other


@dataclass(frozen=True)
class ScdId:
    """md5 of the parts (each as the engine casts it to a string, NULL as ''), joined by '|'."""

    parts: tuple


@dataclass
class HistoryOptions:
    updated_at: str | None = "u"  # None: valid from the run's time (dbt's check strategy)
    check_columns: list[str] | None = None  # None: every column without updated_at, else none
    hard_deletes: str = "ignore"
    late_rows: str = "hold"
    max_delete_fraction: float = 0.5


@dataclass
class HistoryStats:
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    total: int = 0
    held_back: int = 0
    versions: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def _latest(a, b):
    return a if a >= b else b


def history_merge(
    source: list[Row], table: list[Row] | None, key: list[str], columns: list[str],
    opts: HistoryOptions, now: RunTime,
) -> tuple[list[Row], HistoryStats]:
    """One run of a history model: (the table's rows afterwards, the statistics), or MergeError
    (kinds: null_key, duplicate_key, null_updated_at, late_row, late_delete, mass_delete).
    `columns`: the SELECT's columns; `table` None: the first build."""
    kinds = ["null_key" for k in key if any(r[k] is None for r in source)]
    if not kinds:
        _, kinds = dedupe_errors("upsert", source, key, Options())
    if not kinds and opts.updated_at:
        kinds += ["null_updated_at"] * any(r[opts.updated_at] is None for r in source)
    if kinds:
        raise MergeError(kinds[0], "", tuple(kinds[1:]))
    new_record = opts.hard_deletes == "new_record"

    def start_of(r: Row):
        return r[opts.updated_at] if opts.updated_at else now

    def version(r: Row, at, updated) -> Row:
        row = {c: r[c] for c in columns}
        row.update(dbt_scd_id=ScdId((*(r[k] for k in key), at)), dbt_updated_at=updated,
                   dbt_valid_from=at, dbt_valid_to=None)
        if new_record:
            row["dbt_is_deleted"] = "False"
        return row

    if table is None:
        rows = [version(r, start_of(r), start_of(r)) for r in source]
        return rows, HistoryStats(inserted=len(rows), total=len(rows), versions=len(rows))
    compare = (columns if opts.check_columns == ["all"] else opts.check_columns) or (
        [] if opts.updated_at else [c for c in columns if c not in key])
    compare = [c for c in compare if c not in key]
    rows = [dict(t) for t in table]
    keyof = {id(t): tuple(t[k] for k in key) for t in rows}
    current = {keyof[id(t)]: t for t in rows if t["dbt_valid_to"] is None}

    def deleted(t: Row) -> bool:
        return t.get("dbt_is_deleted") == "True"

    stats = HistoryStats()
    closes, opens, records = [], [], []
    late_deletes = 0
    # a run opens a version only strictly after the key's last one starts, and closes one only
    # strictly after it starts: a row (or deletion) that cannot have that is late (held back)
    for r in source:
        k = tuple(r[c] for c in key)
        c, start = current.get(k), start_of(r)
        if c is None:
            past = [t for t in rows if keyof[id(t)] == k]
            ends = [t["dbt_valid_to"] for t in past]
            at = start if not ends or start > max(ends) else _latest(now, max(ends))
            if past and at <= max(t["dbt_valid_from"] for t in past):
                stats.held_back += 1
                continue
            opens.append(version(r, at, start))
            stats.inserted += 1
        elif deleted(c):
            at = start if start > c["dbt_valid_from"] else now
            if not at > c["dbt_valid_from"]:
                stats.held_back += 1
                continue
            closes.append((c, at))
            opens.append(version(r, at, start))
            stats.updated += 1
        elif not opts.updated_at and not compare:
            stats.unchanged += 1  # nothing to compare: nothing can change
        else:
            own = c["dbt_updated_at"] if c["dbt_updated_at"] is not None else c["dbt_valid_from"]
            differ = any(not same(r[col], c[col]) for col in compare)
            # at the current version's own time: late when a column differs (the compared ones,
            # or every one with updated_at alone), else unchanged
            same_time = compare or [col for col in columns if col not in key]
            differ_now = any(not same(r[col], c[col]) for col in same_time)
            newer = start > own and (differ or not compare)
            late = start < own or (start == own and differ_now) or (
                newer and start <= c["dbt_valid_from"])
            if late:
                stats.held_back += 1
            elif newer:
                closes.append((c, start))
                opens.append(version(r, start, start))
                stats.updated += 1
            else:
                stats.unchanged += 1
    late_rows = stats.held_back
    keys = {tuple(r[c] for c in key) for r in source}
    live = sum(not deleted(t) for t in current.values())
    if opts.hard_deletes != "ignore":
        for k, c in current.items():
            if k not in keys and not deleted(c):
                if not now > c["dbt_valid_from"]:
                    late_deletes += 1  # it starts at or after the run's time: closed later
                    continue
                closes.append((c, now))
                stats.deleted += 1
                if new_record:
                    record = dict(c)
                    record.update(dbt_scd_id=ScdId((c["dbt_scd_id"], now)), dbt_updated_at=now,
                                  dbt_valid_from=now, dbt_valid_to=None, dbt_is_deleted="True")
                    records.append(record)
    stats.held_back += late_deletes
    if opts.late_rows == "fail" and late_rows:
        raise MergeError("late_row")
    if opts.late_rows == "fail" and late_deletes:
        raise MergeError("late_delete")
    if stats.deleted and stats.deleted > opts.max_delete_fraction * live:
        raise MergeError("mass_delete")
    for c, at in closes:
        c["dbt_valid_to"] = at
    rows += records + opens
    stats.total = sum(t["dbt_valid_to"] is None for t in rows)
    stats.versions = len(rows)
    return rows, stats
