"""Generated merge cases: a source/target pair, a strategy and its options.

How cases are generated: hypothesis draws each case from `case_strategy` (composite keys of
mixed types, NULLs, duplicate keys, empty source/target, a missing target, unicode and quote
characters, floats incl. NaN/inf/-0.0, dates and timestamps). Running one dbt invocation per
hypothesis example would cost minutes per case on Spark, so `generate_cases` runs a collecting
@given once per strategy with `derandomize=True` (a fixed seed: the same cases every run, no
example database) and returns the drawn examples as a list; the tests then execute them in
batches, one model per case in one dbt project. Failures are reported with the case's id and
its full repr (cases are small), instead of hypothesis shrinking.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .reference import MergeError, Options, OrderTerm, Row, Stats, merge

STRATEGY_NAMES = ["upsert", "insert", "update", "full_merge", "deduplicate"]

ERROR_EXCERPTS = {
    "null_key": "is NULL in",
    "duplicate_key": "occur more than once in the model's SELECT",
    "dedup_tie": "tie on dedup_order_by",
    "dedup_differ": "have rows that differ and no dedup_order_by is set",
}


@dataclass
class Case:
    id: str
    strategy: str
    key: list[str]
    columns: list[tuple[str, str]]  # (name, logical type); keys first
    source: list[Row]
    target: list[Row] | None  # None: the table does not exist yet (first run)
    opts: Options = field(default_factory=Options)

    @property
    def names(self) -> list[str]:
        return [c for c, _ in self.columns]

    def config(self) -> dict:
        cfg: dict = {"strategy": self.strategy, "unique_key": self.key}
        if len(self.key) == 1 and self.id.endswith(("0", "5")):
            cfg["unique_key"] = self.key[0]  # the string form of the option
        if self.opts.dedup_order_by:
            cfg["dedup_order_by"] = [
                t.column + (" desc" if t.descending else "") for t in self.opts.dedup_order_by
            ]
        if self.opts.update_columns is not None:
            cfg["merge_update_columns"] = self.opts.update_columns
        if self.opts.exclude_columns:
            cfg["merge_exclude_columns"] = self.opts.exclude_columns
        if self.opts.predicate:
            column, value = self.opts.predicate
            cfg["incremental_predicates"] = [f"DBT_INTERNAL_DEST.{column} >= {value}"]
        return cfg

    def expected(self) -> tuple[list[Row], Stats] | MergeError:
        try:
            return merge(self.strategy, self.source, self.target, self.key, self.opts)
        except MergeError as e:
            return e


# ------------------------------------------------------------------ values

SPECIAL_CHARS = list("aAzZ0 '\"`\\;-%_,.()\n\té中😀İıß\u200b\u00a0")
text = st.one_of(
    st.text(
        alphabet=st.one_of(
            st.sampled_from(SPECIAL_CHARS),
            st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        ),
        max_size=8,
    ),
    st.sampled_from(["--", "/*", "'); drop table t; --", "a  ", " a", "NULL", "null"]),
)
floats = st.one_of(
    st.sampled_from([0.0, -0.0, 0.1, 1.5, -2.25, 1e308, 5e-324, float("inf"), float("-inf")]),
    st.floats(allow_nan=False, allow_infinity=True),
    st.just(float("nan")),
)
ints = st.one_of(st.sampled_from([0, 1, -1, 2**63 - 1, -(2**63)]), st.integers(-(2**63), 2**63 - 1))
dates = st.dates(dt.date(1900, 1, 1), dt.date(2200, 12, 31))
timestamps = st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 12, 31))

VALUES = {
    "int": ints,
    "float": floats,
    "str": text,
    "date": dates,
    "ts": timestamps,
    "bool": st.booleans(),
}
# Small domains: make equal values (ties, unchanged rows, key collisions) common.
SMALL = {
    "int": st.sampled_from([0, 1, 2, -7]),
    "float": st.sampled_from([0.0, 1.5, float("nan")]),
    "str": st.sampled_from(["", "a", "A", "'", 'a"b', "é"]),
    "date": st.sampled_from([dt.date(2024, 1, 1), dt.date(1999, 12, 31)]),
    "ts": st.sampled_from([dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 0, 1)]),
    "bool": st.booleans(),
}
KEY_TYPES = ["int", "str", "date"]
VALUE_TYPES = list(VALUES)
ORDERABLE = ["int", "str", "date", "ts"]


def value(draw, typ: str, nullable: bool = True):
    if nullable and draw(st.integers(0, 9)) == 0:
        return None
    if draw(st.booleans()):
        return draw(SMALL[typ])
    return draw(VALUES[typ])


@st.composite
def case_strategy(draw, strategy: str) -> Case:
    # Shapes and branch choices come from a hypothesis-seeded Random (hypothesis' own integer
    # draws favour their bounds, which made most sources empty); values come from hypothesis.
    rnd = random.Random(f"{strategy}:{draw(st.integers(0, 2**64))}")

    def chance(percent: int) -> bool:
        return rnd.random() * 100 < percent

    key_types = draw(st.lists(st.sampled_from(KEY_TYPES), min_size=1, max_size=3))
    val_types = draw(st.lists(st.sampled_from(VALUE_TYPES), min_size=1, max_size=4))
    key = [f"k{i + 1}" for i in range(len(key_types))]
    columns = list(zip(key, key_types, strict=True))
    columns += [(f"v{i + 1}", t) for i, t in enumerate(val_types)]
    dedupe = strategy == "deduplicate"
    opts = Options()

    if dedupe and chance(75):
        if chance(60):
            columns.append(("seq", draw(st.sampled_from(["int", "ts"]))))
        orderable = [c for c, t in columns if c not in key and t in ORDERABLE]
        if orderable:
            chosen = draw(st.lists(st.sampled_from(orderable), min_size=1, max_size=2, unique=True))
            opts.dedup_order_by = [OrderTerm(c, draw(st.booleans())) for c in chosen]
    value_cols = [c for c, _ in columns if c not in key]
    if strategy != "insert" and chance(30):
        subset = draw(st.lists(st.sampled_from(value_cols), unique=True, max_size=len(value_cols)))
        if draw(st.booleans()):
            opts.update_columns = subset
        else:
            opts.exclude_columns = subset
    types = dict(columns)

    def key_value(c: str):
        return draw(SMALL[types[c]]) if draw(st.booleans()) else draw(VALUES[types[c]])

    pool = [tuple(key_value(c) for c in key) for _ in range(rnd.randint(1, 6))]
    pool = list(dict.fromkeys(pool))  # unique key tuples (the key types never hold NaN)

    def fresh_row(k: tuple) -> Row:
        r = dict(zip(key, k, strict=True))
        for c in value_cols:
            r[c] = value(draw, types[c])
        return r

    target: list[Row] | None = None
    if not chance(12):
        target = [fresh_row(k) for k in pool if chance(60)]
    by_key = {tuple(t[c] for c in key): t for t in target or []}

    source: list[Row] = []
    if pool and not chance(8):
        allow_dups = dedupe or chance(12)
        if allow_dups:
            keys = [rnd.choice(pool) for _ in range(rnd.randint(1, 8))]
        else:
            keys = rnd.sample(pool, rnd.randint(1, len(pool)))
        for k in keys:
            if source and dedupe and chance(20):
                source.append(dict(rnd.choice(source)))  # an exact duplicate row
                continue
            if k in by_key and chance(40):
                r = dict(by_key[k])  # same row as the target: unchanged unless mutated
                if chance(40):
                    c = draw(st.sampled_from(value_cols))
                    r[c] = value(draw, types[c])
            else:
                r = fresh_row(k)
            source.append(r)
    if source and chance(4):
        rnd.choice(source)[rnd.choice(key)] = None
    int_keys = [c for c in key if types[c] == "int"]
    if target and int_keys and chance(25):
        # incremental_predicates narrow the target. As in dbt, they are a promise that every
        # source row falls inside them (else a row excluded from the target is inserted again
        # on every run), so drop the source rows outside.
        column = rnd.choice(int_keys)
        values = [t[column] for t in target if abs(t[column]) < 2**62] or [0]
        opts.predicate = (column, rnd.choice(values))
        source = [r for r in source if opts.in_scope(r)]
    return Case("", strategy, key, columns, source, target, opts)


def generate_cases(strategy: str, n: int) -> list[Case]:
    """`n` distinct cases of one strategy, the same on every run."""
    drawn: list[Case] = []

    @settings(
        max_examples=n,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case_strategy(strategy))
    def collect(case: Case) -> None:
        drawn.append(case)

    collect()
    for i, case in enumerate(drawn):
        case.id = f"{strategy[:3]}{i:03d}"
    return drawn
