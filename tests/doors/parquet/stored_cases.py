"""Generated cases for the dimensions of issue 21 on the Parquet path: column types a Parquet
file stores differently (HUGEINT, INTERVAL, TIME WITH TIME ZONE, fixed-size arrays), key names
that print like a nested field's path, and datasets whose files disagree in schema (written by
pyarrow as other tools write them: an older file without a later column, a narrower type, a
conflicting type).

Each value is modelled by its *token*: what the files store, as a plain Python value (the
reference model of tests/support compares tokens). The SQL literal given to the merge may
spell the same token differently (a TIME WITH TIME ZONE at another offset), or not be
storable at all (a case that must be refused).
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

KEY_KINDS = ("bigint", "hugeint", "varchar", "timetz", "collide")
VALUE_KINDS = ("bigint", "hugeint", "interval", "timetz", "float_array", "varchar")
HISTORIES = ("package", "pyarrow", "missing", "narrow", "conflict")
STRATEGIES = ("upsert", "insert", "update", "full_merge")
# what pyarrow writes as DuckDB writes it (no TIME WITH TIME ZONE, no INTERVAL in Parquet here)
PYARROW_KINDS = {"bigint", "hugeint", "varchar", "float_array", "collide", "struct"}
HUGE = 2**64
STORED_TYPES = {
    "bigint": "BIGINT",
    "hugeint": "DECIMAL(38,0)",
    "interval": "INTERVAL",
    "timetz": "TIME WITH TIME ZONE",
    "float_array": "FLOAT[]",
    "varchar": "VARCHAR",
    "struct": "STRUCT(y BIGINT)",
    "collide": "BIGINT",
}


def token(kind: str, n: int) -> Any:
    """The stored value of seed n."""
    if kind in ("bigint", "collide"):
        return n
    if kind == "hugeint":
        return HUGE + n
    if kind == "interval":
        return n * 7  # milliseconds
    if kind == "timetz":
        return (n * 37) % 1440  # minutes after midnight, UTC
    if kind == "float_array":
        return (float(n), n + 0.5, 0.25)
    if kind == "varchar":
        return f"s{n:04d}"
    if kind == "struct":
        return (n + 1000,)
    raise AssertionError(kind)


def literal(kind: str, n: int, offset: int = 0) -> str:
    """A SQL expression of the SELECT's own type whose stored value is token(kind, n);
    `offset` (hours) spells a TIME WITH TIME ZONE at another offset."""
    t = token(kind, n)
    if kind in ("bigint", "collide"):
        return f"{t}::bigint"
    if kind == "hugeint":
        return f"{t}::hugeint"
    if kind == "interval":
        return f"interval '{t} milliseconds'"
    if kind == "timetz":
        local = (t + offset * 60) % 1440
        return f"'{local // 60:02d}:{local % 60:02d}:00+{offset:02d}'::timetz"
    if kind == "float_array":
        return f"[{t[0]}, {t[1]}, {t[2]}]::float[3]"
    if kind == "varchar":
        return f"'{t}'"
    if kind == "struct":
        return f"{{'y': {t[0]}::bigint}}"
    raise AssertionError(kind)


def stored_literal(kind: str, n: int) -> str:
    """token(kind, n) in the type the files store (to write a dataset the way others do)."""
    if kind == "timetz":
        return literal(kind, n, 0)
    return f"cast({literal(kind, n)} as {STORED_TYPES[kind]})"


def read_token(kind: str, value: Any) -> Any:
    """The token of a value read back from the dataset."""
    if value is None:
        return None
    if kind == "hugeint":
        assert isinstance(value, Decimal | int), (kind, value)
        return int(value)
    if kind == "interval":
        assert isinstance(value, datetime.timedelta), (kind, value)
        return round(value.total_seconds() * 1000)
    if kind == "timetz":
        offset = value.utcoffset() or datetime.timedelta(0)
        minutes = value.hour * 60 + value.minute - round(offset.total_seconds() / 60)
        return minutes % 1440
    if kind == "float_array":
        return tuple(float(x) for x in value)
    if kind == "struct":
        return (value["y"],)
    return value


BAD_VALUES = {
    "hugeint": (
        "170141183460469231731687303715884105727::hugeint",
        "which Parquet stores as DOUBLE (rounded), so the dataset stores it as DECIMAL(38,0)",
    ),
    "interval": (
        "interval '5 microseconds'",
        "which Parquet stores in milliseconds, and a value has microseconds",
    ),
}


@dataclass
class StoredCase:
    id: str
    strategy: str
    key_kind: str
    columns: list[tuple[str, str]]  # (name, kind), the key first
    history: str
    target: list[dict[str, int]]  # seeds per column
    source: list[dict[str, int]]
    offsets: dict[int, int] = field(default_factory=dict)  # source row -> timetz offset
    bad: str | None = None  # a value column given an unstorable value in one source row
    missing: str | None = None  # the column the oldest file lacks (history 'missing')
    narrow: list[str] = field(default_factory=list)  # columns int32 in the oldest file
    conflict: str | None = None  # the column VARCHAR in the oldest file (history 'conflict')

    @property
    def key(self) -> str:
        return self.columns[0][0]

    def kinds(self) -> dict[str, str]:
        return dict(self.columns)

    def tokens(self, row: dict[str, int], file_index: int | None = None) -> dict[str, Any]:
        out = {}
        for name, kind in self.columns:
            lacking = self.missing == name and file_index == 0
            out[name] = None if lacking or row.get(name) is None else token(kind, row[name])
        return out

    def __repr__(self) -> str:
        return (
            f"StoredCase({self.id} {self.strategy} key={self.key_kind} columns={self.columns} "
            f"history={self.history} bad={self.bad} missing={self.missing} "
            f"narrow={self.narrow} conflict={self.conflict} target={self.target} "
            f"source={self.source} offsets={self.offsets})"
        )


def _row(columns: list[tuple[str, str]], key_name: str, k: int, seed: int) -> dict[str, int]:
    """The seeds of the row of key seed k: the key, x.y = key + 1000 (a nested field printed
    as the key's path), and values that change with `seed`."""
    r = {}
    for name, kind in columns:
        r[name] = k if kind == "struct" or name == key_name else seed + 3 * k
    return r


def generate(count: int, seed: int = 21) -> list[StoredCase]:
    rng = random.Random(seed)
    cases = []
    while len(cases) < count:
        index = len(cases)
        strategy = STRATEGIES[index % len(STRATEGIES)]
        key_kind = KEY_KINDS[(index // len(STRATEGIES)) % len(KEY_KINDS)]
        history = rng.choice(HISTORIES)
        if key_kind not in PYARROW_KINDS:
            history = "package"
        if history == "package":
            values = rng.sample(VALUE_KINDS, rng.choice((1, 2)))
        else:
            values = rng.sample(sorted(PYARROW_KINDS & set(VALUE_KINDS)), rng.choice((1, 2)))
            if history == "conflict" and "bigint" not in values:
                values[0] = "bigint"
        key_name = "x, y" if key_kind == "collide" else rng.choice(("id", "Id"))
        columns = [(key_name, key_kind)]
        if key_kind == "collide":
            columns.append(("x", "struct"))  # field y of x prints as `x, y` too
        columns += [(f"v{i}", kind) for i, kind in enumerate(values)]
        kinds = {kind for _, kind in columns}
        if history != "package" and not kinds <= PYARROW_KINDS:
            history = "package"
        case = StoredCase(f"s{index:03d}", strategy, key_kind, columns, history, [], [])
        plain = [name for name, kind in columns[1:] if kind != "struct"]
        if history == "missing":
            if not plain:
                history = case.history = "pyarrow"
            else:
                case.missing = plain[-1]
        if history == "narrow":
            case.narrow = [n for n, k in columns if k in ("bigint", "collide")] or []
            if not case.narrow:
                case.history = "pyarrow"
        if history == "conflict":
            ints = [n for n, k in columns[1:] if k == "bigint"]
            if ints:
                case.conflict = ints[0]
            else:
                case.history = "pyarrow"
        # keys: seeds; the dataset sorted by key in files of 3, so pruning matters
        key_seeds = rng.sample(range(1, 40), rng.randint(4, 9))
        target_keys = sorted(key_seeds[: rng.randint(2, len(key_seeds) - 1)])
        others = key_seeds[len(target_keys) :]
        matched = rng.sample(target_keys, rng.randint(1, len(target_keys)))
        if strategy == "full_merge":
            # keep most rows: the mass-delete guard is not this suite's subject
            matched = sorted(set(matched) | set(target_keys[: max(1, len(target_keys) - 1)]))
        source_keys = matched + (others if strategy != "update" or rng.random() < 0.5 else [])

        case.target = [_row(columns, key_name, k, 0) for k in target_keys]
        for k in source_keys:
            changed = rng.random() < 0.5
            case.source.append(_row(columns, key_name, k, 1 if changed else 0))
        for i in range(len(case.source)):
            case.offsets[i] = rng.choice((0, 1, 2, 5))
        bad_kinds = [n for n, k in columns[1:] if k in BAD_VALUES]
        if bad_kinds and rng.random() < 0.25:
            case.bad = bad_kinds[0]
        cases.append(case)
    return cases
