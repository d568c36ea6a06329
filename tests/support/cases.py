"""Generated merge cases: a SELECT, a target table, a strategy, its options and how dbt runs it.

How cases are generated: hypothesis draws each case from `case_strategy`. A case varies
- its values: composite keys of mixed types, NULLs, duplicate keys, empty source/target, a
  missing target, unicode and quote characters, floats incl. NaN/inf/-0.0, dates, timestamps;
- column and key names: plain, the package's internal names and aliases (any case), reserved
  words, spaces, quotes and other odd characters (NAMES);
- the target's column types against the SELECT's (KEY_PAIRS, VALUE_PAIRS): the table may be
  created with another type than the SELECT produces, and the reference converts values the
  way the engine stores them (coltypes.py);
- the target's state: duplicate keys and NULL keys;
- incremental_predicates, with SELECT rows whose key lies outside them, and
  on_key_outside_predicates set or not;
- full_merge's max_delete_fraction (absent, 0, 0.3, 1, invalid) with sources deleting none,
  a few, most or all of the target's rows;
- how dbt runs it: `--empty` / `--full-refresh` on the first invocation, `--threads 1` or 4,
  and pairs of models writing tables of the SAME name in two schemas in one invocation;
- an enforced contract (kept, or broken by a wrong type or an extra column);
- a non-deterministic SELECT (a random() value column, or a random() filter), for which the
  tests check invariants instead of exact rows.

Shapes and branch choices come from a hypothesis-seeded Random (hypothesis' own integer draws
favour their bounds, which made most sources empty); values come from hypothesis. Running one
dbt invocation per hypothesis example would cost minutes per case on Spark, so
`generate_cases` runs a collecting @given once per strategy, under the hypothesis settings
profile named by DBT_MERGE_PROFILE (`ci`, the default: derandomized, the same cases on every
run; `long`: 5x the cases, a new seed each run, DBT_MERGE_SEED to replay one), and returns
the drawn examples; the tests run them in batches, one model per case. Failures are reported
with the case's id and its full repr (cases are small) instead of hypothesis shrinking.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import os
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from .coltypes import (
    DUCKDB_ONLY,
    INT_RANGES,
    ConversionError,
    convert,
    decimal_of,
    float32,
    quantize,
)
from .reference import (
    STAGES,
    MergeError,
    Options,
    OrderTerm,
    Row,
    Stats,
    Unknown,
    config_errors,
    merge,
    row_token,
    type_errors,
    value_token,
)

STRATEGY_NAMES = ["upsert", "insert", "update", "full_merge", "deduplicate"]

ERROR_EXCERPTS = {
    "config_max_delete_fraction": "max_delete_fraction",
    "config_on_key_outside": "on_key_outside_predicates",
    "null_key": "is NULL in",
    "key_type": "has type",
    "time_zone": "through the session time zone",
    "key_conversion": "cannot be stored",
    "value_conversion": "cannot be stored",
    "duplicate_key": "occur more than once in the model's SELECT",
    "dedup_tie": "tie on dedup_order_by",
    "dedup_differ": "have rows that differ and no dedup_order_by is set",
    "target_duplicate_key": "already holds",
    "key_outside_predicates": "outside incremental_predicates",
    "mass_delete": "max_delete_fraction",
    "contract": "contract",  # dbt's own error, not the package's
}
assert {k for stage in STAGES for k in stage} | {"contract"} == set(ERROR_EXCERPTS)

# ------------------------------------------------------------------ hypothesis profiles

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    phases=[Phase.generate],
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
settings.register_profile("long", settings.get_profile("ci"), derandomize=False)
PROFILE = os.environ.get("DBT_MERGE_PROFILE", "ci")
if PROFILE not in ("ci", "long"):
    raise ValueError(f"DBT_MERGE_PROFILE={PROFILE!r}: use ci or long")
SEED = int(os.environ.get("DBT_MERGE_SEED") or random.randrange(2**32)) if PROFILE == "long" else 0

# ------------------------------------------------------------------ names

# Names the package uses in its SQL (work columns, aliases, the output columns of its check and
# count queries; SEMANTICS_10 §3). test_case_mix fails when macros/ uses one not listed here.
INTERNAL_NAMES = [
    "dbt_merge_action", "dbt_merge_rows", "dbt_merge_variants", "dbt_merge_row",
    "dbt_merge_repeated", "dbt_merge_numbered", "dbt_merge_changes", "dbt_merge_count",
    "dbt_merge_check", "dbt_merge_delete", "dbt_merge_insert", "dbt_merge_merge", "grouped",
    "null_rows_1", "null_rows_2", "extra_rows", "bad_keys", "bad_example", "tied_keys",
    "inserted", "updated", "deleted", "unchanged", "target_rows", "source_rows", "considered",
    "n_records", "DBT_INTERNAL_SOURCE", "DBT_INTERNAL_DEST", "matched_keys", "held_back",
    "condition_deletes", "dbt_merge_key", "dbt_merge_duplicates", "dbt_merge_conf",
    "dbt_merge_collations", "dbt_merge_history", "dbt_merge_soft_delete", "dbt_merge_dry_run",
    "dbt_merge_drop_partitions", "dbt_merge_work_table", "dbt_merge_overwrite",
    "dbt_merge_work_rows", "dbt_merge_emptied", "file_format", "dbt_merge_parquet",
    "dbt_merge_affected", "dbt_merge_source_rows", "dbt_merge_work", "dbt_merge_parquet_result",
    "dbt_merge_written", "dbt_merge_describe", "dbt_merge_parquet_", "dbt_merge_leftovers",
    "dbt_merge_match", "dbt_merge_m", "dbt_merge_m1", "dbt_merge_rebuild",
]  # fmt: skip
#: Names of macros/ that never name a column or alias in the SQL, so the cases need not use
#: them: a statement's name, a variable of the Python door's context, a suffix of a table name;
#: and aliases in queries of Iceberg's metadata tables only (refs, snapshots, files), where the
#: model's columns appear only as fields of readable_metrics, never beside them; and the one
#: column of stage_select's probe (a literal beside no column of the model's).
NOT_COLUMN_NAMES = {"dbt_merge_branch", "dbt_merge_branches", "dbt_merge_new_", "dbt_merge_view",
                    "dbt_merge_views", "dbt_merge_files", "dbt_merge_sizes", "dbt_merge_ids",
                    "snapshot_id", "dbt_merge_parquet_check", "dbt_merge_find_relation",
                    "dbt_merge_extensions", "dbt_merge_history_check", "dbt_merge_writer"}
RESERVED_NAMES = [
    "select", "from", "where", "order", "group", "by", "key", "value", "table", "end", "case",
    "when", "null", "limit", "using", "on", "merge", "matched", "set", "values", "join", "as",
    "not", "distinct", "row", "struct", "desc",
]  # fmt: skip
ODD_NAMES = [
    "Mixed Case", "it's", 'say "hi"', "back`tick", 'x"; drop table t; --', "a-b", "100%",
    "é", "中文", "semi;colon", "(paren)", "two  spaces", "dollar$",
]  # fmt: skip
PADDED_NAMES = [" lead", "trail "]  # legal, but a config value is trimmed
NAME_KINDS = {"internal": INTERNAL_NAMES, "reserved": RESERVED_NAMES, "odd": ODD_NAMES}


def name_kind(name: str) -> str:
    lower = name.lower()
    for kind, names in NAME_KINDS.items():
        if lower in (n.lower() for n in names):
            return kind
    return "padded" if name in PADDED_NAMES else "plain"


def scan_internal_names(macros: Path) -> set[str]:
    """Identifiers the package's SQL invents: dbt_merge_*, DBT_INTERNAL_*, snake_case aliases."""
    text = "\n".join(p.read_text() for p in macros.rglob("*.sql"))
    text = re.sub(r"\{#.*?#\}", "", text, flags=re.S)  # not in comments
    text = re.sub(r"\bvar\('[^']*'", "var(", text)  # nor dbt vars: never a name in the SQL
    names = set(re.findall(r"\b(dbt_merge_[a-z0-9_]+|DBT_INTERNAL_[A-Z]+)\b", text))
    aliases = re.findall(r"\bas ([a-z]+_[a-z0-9_]*)", text)
    names |= {m + ("1" if m.endswith("_") else "") for m in aliases}  # null_rows_{{ i }}
    return names


# ------------------------------------------------------------------ types and values

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


def decimals(typ: str):
    p, s = decimal_of(typ)
    bound = Decimal(10) ** (p - s) - Decimal(1).scaleb(-s)
    return st.decimals(-bound, bound, places=s, allow_nan=False, allow_infinity=False)


VALUES = {
    "int": ints,
    "int32": st.integers(-(2**31), 2**31 - 1),
    "float": floats,
    "real": st.one_of(st.floats(width=32), st.just(float("nan"))),
    "str": text,
    "date": dates,
    "ts": timestamps,
    "bool": st.booleans(),
}
# Small domains: make equal values (ties, unchanged rows, key collisions) common.
SMALL = {
    "int": [0, 1, 2, -7],
    "int32": [0, 1, 2, -7],
    "float": [0.0, 1.5, float("nan")],
    "real": [0.0, 1.5, float("nan")],
    "str": ["", "a", "A", "'", 'a"b', "é"],
    "date": [dt.date(2024, 1, 1), dt.date(1999, 12, 31)],
    "ts": [dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 0, 1)],
    "bool": [True, False],
    "dec": ["0", "1.5", "-2.25", "1.005"],
}

D = Decimal
T0 = dt.datetime(2024, 1, 1)
UUIDS = ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "00000000-0000-0000-0000-000000000001"]
# (SELECT type, target type) pairs: small domains that make the conversion matter (roundings,
# collisions, ties) and values that cannot be stored (keys only: key_conversion).
PAIRS = {
    ("int", "int32"): ([0, 1, -7, 2**31 - 1, -(2**31)], [2**31, -(2**31) - 1, 2**40]),
    ("int32", "int"): ([0, 1, -7, 2**31 - 1], []),
    ("dec(10,1)", "int"): ([D(v) for v in "1.5 2.5 -2.5 1.6 2.4 0.4 -0.5 2.0 -1.6".split()], []),
    ("dec(10,1)", "int32"): ([D(v) for v in "0.5 1.5 -1.5 2.6 3.4 -0.4".split()], []),
    ("float", "int"): (
        [0.5, 1.5, 2.5, -0.5, -1.5, 1.4, 1.6, 2.0, -2.6, 1e18],
        [float("nan"), float("inf"), -float("inf"), 1e19, -1e19],
    ),
    ("int", "dec(18,2)"): ([0, 1, -7, 10**15], [10**16, -(10**17)]),
    ("int", "dec(6,0)"): ([0, 1, -7, 999_999], [10**6, -(10**6)]),
    ("dec(18,3)", "dec(18,2)"): ([D(v) for v in "1.005 1.004 1.015 -1.005 1.0 1.01".split()], []),
    ("int", "float"): ([0, 1, 2**53, 2**53 + 1, 2**53 + 2, -(2**53) - 1, 2**63 - 1], []),
    ("ts", "date"): (
        [T0, T0.replace(hour=12), T0.replace(hour=23, minute=59, second=59, microsecond=999999),
         dt.datetime(2024, 1, 2, 0, 0, 0, 1), dt.datetime(1999, 12, 31, 23)],
        [],
    ),  # fmt: skip
    ("date", "ts"): ([dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(1900, 1, 1)], []),
    ("float", "real"): (  # out of range: an error on DuckDB, infinity on Spark
        [0.1, 1.1, 16777217.0, 1.5, 1e-46, float("nan"), float("inf"), -0.0, 3.0e38], [1e39, -1e39]
    ),
    ("real", "float"): ([0.5, float32(0.1, "duckdb"), float("nan")], []),
    ("str", "uuid"): (
        [u for x in UUIDS for u in (x, x.upper(), "{" + x + "}", x.replace("-", ""))],
        ["", "not-a-uuid", "g" * 32],
    ),
    ("str", "nocase"): (["a", "A", "b", "B", "ab", "AB", "Ab", "é", "É"], []),
    ("str", "int"): (["1", "02", "x"], []),  # refused: a string key into a number (key_type)
    ("int", "str"): ([1, 2], []),
}
KEY_SAME = ["int", "int", "str", "str", "date", "int32", "dec(18,3)", "ts"]
KEY_PAIRS = [p for p in PAIRS if p not in {("real", "float"), ("float", "real")}]
KEY_TYPE_PAIRS = [("str", "int"), ("int", "str")]
VALUE_SAME = ["int", "float", "str", "date", "ts", "bool", "int32", "real", "dec(18,3)"]
# Injective conversions: two different SELECT values stay different in the target, so the
# rows deduplicate compares are the same rows whichever types it compares them in.
VALUE_LOSSLESS = [("int32", "int"), ("int", "int32"), ("date", "ts"), ("real", "float"),
                  ("int", "dec(18,2)")]  # fmt: skip
VALUE_LOSSY = [("float", "real"), ("dec(18,3)", "dec(18,2)"), ("dec(10,1)", "int"),
               ("float", "int"), ("ts", "date"), ("str", "uuid"), ("int", "float")]  # fmt: skip
ORDERABLE = ["int", "int32", "str", "date", "ts", "float", "dec(18,3)"]
INT_LIKE = ("int", "int32")


def in_type(value, typ: str):
    """A drawn value as a column of `typ` holds it (float32, decimal places)."""
    if value is None:
        return None
    if typ == "real":
        return float32(value, "duckdb")
    if decimal_of(typ):
        return quantize(D(value), typ)
    return value


def storable(value, src: str, tgt: str) -> bool:
    """Can the target store the value on both engines?"""
    try:
        for engine in ("duckdb", "spark"):
            convert(value, src, tgt, engine)
    except ConversionError:
        return False
    return True


# ------------------------------------------------------------------ cases


@dataclass
class Column:
    name: str
    source: str  # logical type in the SELECT
    target: str  # logical type in the existing table


@dataclass
class Table:
    """A table's state: its columns as (name, logical type) and its rows."""

    columns: list[tuple[str, str]]
    rows: list[Row]

    @property
    def names(self) -> list[str]:
        return [c for c, _ in self.columns]

    @property
    def types(self) -> dict[str, str]:
        return dict(self.columns)


@dataclass
class Outcome:
    """What one dbt invocation must do to one model."""

    error: MergeError | None = None
    skipped: bool = False  # --empty on an existing table
    stats: Stats | None = None
    after: Table | None = None  # the table afterwards (None: there is none)


MODES = {  # the first invocation's flags; later invocations run plainly
    "run": [],
    "empty": ["--empty"],
    "full_refresh": ["--full-refresh"],
    "empty_full_refresh": ["--empty", "--full-refresh"],
}


@dataclass
class Case:
    id: str
    strategy: str
    key: list[str]
    columns: list[Column]  # keys first
    source: list[Row]  # the SELECT's rows (SELECT types)
    target: list[Row] | None  # None: the table does not exist yet (first run)
    opts: Options = field(default_factory=Options)
    contract: str | None = None  # None | ok | wrong_type | extra_column
    contract_column: str | None = None  # the column a broken contract gets wrong
    nondet: str | None = None  # None | value (random() column) | filter (random() WHERE)
    random_column: str | None = None
    mode: str = "run"  # MODES: flags of the first invocation
    threads: int = 1
    same_name: bool = False  # shares its table name with another case, in another schema
    dry_run: bool = False  # config(dry_run=true): every check and count, nothing written
    time_zone: str | None = None  # the session's TimeZone (DuckDB), set by a pre-hook
    # the session's default_collation (DuckDB), set by a pre-hook and reset by a post-hook
    collation: str | None = None
    schema_suffix: str = ""  # set by generate_cases: "" or "_twin"
    table: str = ""  # the table's name (the model is m_<id>)
    shape: int = 0  # the seed of the choices that made the case

    @property
    def model(self) -> str:
        return f"m_{self.id}"

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def source_columns(self) -> list[tuple[str, str]]:
        return [(c.name, c.source) for c in self.columns]

    @property
    def target_columns(self) -> list[tuple[str, str]]:
        return [(c.name, c.target) for c in self.columns]

    @property
    def duckdb_only(self) -> bool:
        return any(c.target in DUCKDB_ONLY for c in self.columns)

    def initial(self) -> Table | None:
        return None if self.target is None else Table(self.target_columns, self.target)

    def config(self, quote) -> dict:
        """The model's config; `quote` quotes an identifier for the engine."""
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
            cfg["incremental_predicates"] = [f"DBT_INTERNAL_DEST.{quote(column)} >= {value}"]
        if self.opts.on_key_outside is not None:
            cfg["on_key_outside_predicates"] = self.opts.on_key_outside
        if self.opts.max_delete_fraction is not None:
            cfg["max_delete_fraction"] = self.opts.max_delete_fraction
        if self.opts.check_columns is not None:
            cfg["merge_check_columns"] = self.opts.check_columns
        if self.opts.detect_unchanged is not None:
            cfg["detect_unchanged"] = self.opts.detect_unchanged
        if self.opts.update_condition is not None:
            c = quote(self.opts.update_condition)
            cfg["merge_update_condition"] = f"DBT_INTERNAL_SOURCE.{c} > DBT_INTERNAL_DEST.{c}"
        if self.opts.delete_condition is not None:
            c, v = self.opts.delete_condition
            cfg["delete_condition"] = f"DBT_INTERNAL_SOURCE.{quote(c)} = {v}"
        if self.dry_run:
            cfg["dry_run"] = True
        if self.opts.soft_delete is not None:
            cfg["soft_delete_column"] = self.opts.soft_delete
        if self.time_zone is not None:
            cfg["pre_hook"] = f"set TimeZone = '{self.time_zone}'"
        if self.collation is not None:
            cfg["pre_hook"] = f"set session default_collation = '{self.collation}'"
            cfg["post_hook"] = "reset session default_collation"
        return cfg

    def select(self, relation: str, quote, random_sql: str) -> str:
        """The model's SELECT from `relation` (a `{{ source(...) }}` call)."""
        if self.nondet == "filter":
            return f"select * from {relation} where {random_sql} < 0.5"
        if self.nondet == "value":
            cols = [
                f"{random_sql} as {quote(n)}" if n == self.random_column else quote(n)
                for n in self.names
            ]
            return f"select {', '.join(cols)} from {relation}"
        return f"select * from {relation}"

    def contract_columns(self, type_name) -> list[dict] | None:
        """The schema.yml columns of an enforced contract; `type_name` names a logical type."""
        if self.contract is None:
            return None
        columns = []
        for name, typ in self.source_columns:
            if self.contract == "extra_column" and name == self.contract_column:
                continue  # the SELECT has a column the contract does not
            if self.contract == "wrong_type" and name == self.contract_column:
                typ = WRONG_TYPE[typ if not decimal_of(typ) else "dec"]
            columns.append({"name": name, "data_type": type_name(typ), "quote": True})
        return columns

    def reference_source(self) -> list[Row]:
        """The SELECT's rows as far as the reference can know them."""
        if self.nondet != "value":
            return self.source
        return [{**r, self.random_column: Unknown()} for r in self.source]

    def outcome(self, mode: str, before: Table | None, engine: str) -> Outcome | None:
        """What an invocation in `mode` (MODES) must do, from the table state `before`
        (None: no table). None when the reference cannot say (a random() filter)."""
        if self.nondet == "filter":
            return None
        rebuild = before is None or "full_refresh" in mode
        source = [] if mode.startswith("empty") else self.reference_source()
        contract_broken = self.contract in ("wrong_type", "extra_column")
        try:
            if rebuild:
                rows, stats = merge(self.strategy, source, None, self.key, self.opts)
                after = Table(self.source_columns, rows)
            elif mode == "empty":
                types = {n: (s, before.types[n]) for n, s in self.source_columns}
                kinds = config_errors(self.strategy, self.opts) + type_errors(self.key, types)
                if kinds:
                    raise MergeError(kinds[0], "", tuple(kinds[1:]))
                if not contract_broken:
                    return Outcome(skipped=True, after=before)
            else:
                types = {n: (s, before.types[n]) for n, s in self.source_columns}
                rows, stats = merge(
                    self.strategy, source, before.rows, self.key, self.opts,
                    types=types, engine=engine,
                )  # fmt: skip
                after = Table(before.columns, rows)
        except MergeError as e:
            if contract_broken:
                e.kinds = (*e.kinds, "contract")
            return Outcome(error=e, after=before)
        if contract_broken:
            return Outcome(error=MergeError("contract"), after=before)
        if self.dry_run:  # the statistics of the merge it would make, the table as it was
            return Outcome(stats=stats, after=before)
        return Outcome(stats=stats, after=after)

    def columns_after(self, mode: str, before: Table | None, ok: bool) -> Table | None:
        """The table's columns after an invocation that succeeded (ok) or failed."""
        if not ok:
            return before
        if before is None or "full_refresh" in mode:
            return Table(self.source_columns, [])
        return Table(before.columns, [])

    def features(self) -> set[str]:
        """Tags of what this case exercises, for reports and test_case_mix."""
        f = {f"strategy:{self.strategy}", f"mode:{self.mode}", f"threads:{self.threads}"}
        for c in self.columns:
            where = "key" if c.name in self.key else "value"
            f.add(f"names:{name_kind(c.name)}")
            if name_kind(c.name) == "internal" and c.name not in INTERNAL_NAMES:
                f.add("names:internal_case_variant")
            if c.source != c.target:
                pair = "->".join(re.sub(r"\(.*", "", t) for t in (c.source, c.target))
                f.add(f"types:{where}:{pair}")
        if self.target is None:
            f.add("target:missing")
        else:
            keyed = [t for t in self.target if all(t[k] is not None for k in self.key)]
            tokens = [row_token(t, self.key) for t in keyed]
            if len(set(tokens)) < len(tokens):
                f.add("target:duplicate_keys")
            if len(keyed) < len(self.target):
                f.add("target:null_keys")
        if self.opts.predicate:
            f.add("predicates")
            if self.target and any(not self.opts.in_scope(t) for t in self.target):
                f.add("predicates:rows_outside")
        if self.opts.on_key_outside is not None:
            f.add(f"on_key_outside:{self.opts.on_key_outside}")
        if self.opts.check_columns is not None:
            f.add("detect:check_columns")
        if self.opts.detect_unchanged is False:
            f.add("detect:off")
        if self.opts.update_condition is not None:
            f.add("condition:update")
        if self.opts.delete_condition is not None:
            f.add("condition:delete")
        if self.strategy == "full_merge":
            f.add(f"max_delete_fraction:{self.opts.max_delete_fraction}")
            if self.target:
                share = self.delete_share()
                f.add("deletes:" + ("none" if not share else "all" if share == 1 else
                                    "most" if share > 0.5 else "few"))  # fmt: skip
        if self.contract:
            f.add(f"contract:{self.contract}")
        if self.nondet:
            f.add(f"nondet:{self.nondet}")
        if self.same_name:
            f.add("same_name")
        if self.dry_run:
            f.add("dry_run")
        if self.time_zone is not None:
            f.add(f"time_zone:{self.time_zone}")
        if self.collation is not None:
            f.add(f"collation:{self.collation}")
        if self.opts.soft_delete is not None:
            f.add("soft_delete")
            if self.target and any(r[self.opts.soft_delete] is True for r in self.target):
                f.add("soft_delete:deleted_rows")
        return f


    def delete_share(self) -> float:
        """The share of the target's rows whose key the SELECT lacks (as DuckDB converts)."""
        kept = set()
        for r in self.source:
            try:
                kept.add(tuple(
                    value_token(convert(r[c.name], c.source, c.target, "duckdb"))
                    for c in self.columns if c.name in self.key
                ))  # fmt: skip
            except (ConversionError, ValueError, NotImplementedError):
                continue
        gone = sum(row_token(t, self.key) not in kept for t in self.target)
        return gone / len(self.target)


WRONG_TYPE = {"int": "int32", "int32": "int", "float": "int", "real": "float", "str": "int",
              "date": "ts", "ts": "date", "bool": "int", "dec": "int"}  # fmt: skip


# ------------------------------------------------------------------ the generator


@st.composite
def case_strategy(draw, strategy: str) -> Case:
    # The seed of the case's shape. Hypothesis makes new examples by mutating earlier ones, and
    # often keeps a single drawn integer: one from several draws gives most examples their own.
    shape = hash(draw(st.tuples(*[st.integers(0, 2**64)] * 8)))
    rnd = random.Random(f"{strategy}:{shape}")

    def chance(percent: float) -> bool:
        return rnd.random() * 100 < percent

    def pick(options: dict):
        """One key of `options` (option -> weight)."""
        return rnd.choices(list(options), weights=list(options.values()))[0]

    # How dbt runs it. A random() SELECT runs plainly, on clean data (invariants only).
    nondet = pick({None: 92, "value": 4, "filter": 4})
    clean = nondet is not None
    mode = "run" if clean else pick({"run": 81, "empty": 10, "full_refresh": 5,
                                     "empty_full_refresh": 4})  # fmt: skip
    same_name = mode == "run" and chance(8)
    threads = 4 if same_name or chance(60) else 1
    dedupe = strategy == "deduplicate"

    taken: set[str] = set()

    def new_name(plain: str) -> str:
        while True:
            kind = pick({"plain": 48, "internal": 30, "reserved": 10, "odd": 10, "padded": 1})
            if kind == "plain":
                name = plain
            elif kind == "padded":
                name = rnd.choice(PADDED_NAMES)
            else:
                name = rnd.choice(NAME_KINDS[kind])
                if kind == "internal":
                    name = rnd.choice([name, name.upper(), name.lower(), name.capitalize()])
            if name.lower() not in taken and name.strip().lower() not in taken:
                taken.add(name.lower())
                taken.add(name.strip().lower())
                return name

    # Columns and their (SELECT, target) types.
    columns: list[Column] = []
    for i in range(pick({1: 50, 2: 35, 3: 15})):
        if mode == "run" and not clean and chance(3):
            src, tgt = rnd.choice(KEY_TYPE_PAIRS)
        elif clean or chance(55):
            src = tgt = rnd.choice(KEY_SAME)
        else:
            src, tgt = rnd.choice([p for p in KEY_PAIRS if p not in KEY_TYPE_PAIRS])
        columns.append(Column(new_name(f"k{i + 1}"), src, tgt))
    key = [c.name for c in columns]
    for i in range(pick({1: 30, 2: 30, 3: 25, 4: 15})):
        if clean or chance(60):
            src = tgt = rnd.choice(VALUE_SAME)
        else:
            src, tgt = rnd.choice(VALUE_LOSSLESS + ([] if dedupe else VALUE_LOSSY))
        columns.append(Column(new_name(f"v{i + 1}"), src, tgt))
    random_column = None
    if nondet == "value":
        random_column = new_name("r")
        columns.append(Column(random_column, "float", "float"))
    opts = Options()
    if dedupe and chance(75):
        if chance(60):
            typ = rnd.choice(["int", "ts", "float"])
            columns.append(Column(new_name("seq"), typ, typ))
        orderable = [
            c.name for c in columns
            if c.name not in key and c.source == c.target and c.source in ORDERABLE
            and c.name != random_column
        ]  # fmt: skip
        if orderable:
            chosen = rnd.sample(orderable, min(len(orderable), rnd.randint(1, 2)))
            opts.dedup_order_by = [OrderTerm(c, chance(50)) for c in chosen]
    value_cols = [c for c in columns if c.name not in key]
    if strategy != "insert" and chance(30):
        subset = [c.name for c in value_cols if chance(50)]
        if chance(50):
            opts.update_columns = subset
        else:
            opts.exclude_columns = subset
    # What "unchanged" means (merge_check_columns, detect_unchanged), drawn from a generator of its
    # own so that adding it left every earlier draw, hence every earlier case, as it was.
    detection = random.Random(f"{strategy}:{shape}:detection")
    # (not with random() values: the invariants judge "updated" by the table's diff, and these
    # options count rows whose written columns did not change)
    if strategy != "insert" and nondet is None and detection.random() < 0.25:
        if detection.random() < 0.4:
            opts.detect_unchanged = False
        elif value_cols:
            names = [c.name for c in value_cols]
            opts.check_columns = detection.sample(names, detection.randint(1, min(2, len(names))))

    # Values: a column's value in the SELECT's type, one its target can store.
    def draw_value(c: Column, nullable: bool = True, unstorable: float = 0):
        """`unstorable`: the chance in percent of a value the target cannot store."""
        if nullable and chance(10):
            return None
        small, bad = PAIRS.get((c.source, c.target), (None, []))
        if bad and not clean and chance(unstorable):
            return rnd.choice(bad)
        for _ in range(20):
            if small and chance(70):
                v = rnd.choice(small)
            elif chance(50):
                dec = decimal_of(c.source)
                v = in_type(D(rnd.choice(SMALL["dec"])) if dec else rnd.choice(SMALL[c.source]),
                            c.source)  # fmt: skip
            else:
                dec = decimal_of(c.source)
                v = in_type(draw(decimals(c.source) if dec else VALUES[c.source]), c.source)
            if c.source == c.target or (c.source, c.target) in KEY_TYPE_PAIRS:
                return v
            if storable(v, c.source, c.target):
                return v
        return rnd.choice(small)

    def stored(pre: Row) -> Row:
        """A SELECT row as the target holds it (DuckDB's rounding; the reference knows both)."""
        return {c.name: convert(pre[c.name], c.source, c.target, "duckdb") for c in columns}

    def fresh_row(k: tuple) -> Row:
        r = dict(zip(key, k, strict=True))
        for c in value_cols:
            r[c.name] = draw_value(c)
        return r

    # Keys: a pool of SELECT keys; target rows are pool rows as the target stores them.
    key_cols = columns[: len(key)]
    pool = [tuple(draw_value(c, False, 8) for c in key_cols) for _ in range(rnd.randint(1, 8))]
    pool = list(dict.fromkeys(pool))
    pre_images: dict[tuple, Row] = {}  # pool key -> the SELECT row stored in the target
    target: list[Row] | None = None
    if not chance(6 if strategy == "full_merge" else 12):
        target = []
        for k in pool:
            if not chance(60):
                continue
            pre = fresh_row(k)
            try:
                target.append(stored(pre))
            except ConversionError:
                continue  # a key the target cannot hold
            pre_images[k] = pre
        if target and not clean and chance(15):  # duplicate keys already in the target
            for _ in range(rnd.randint(1, 2)):
                dup = dict(rnd.choice(target))
                for c in value_cols:
                    dup[c.name] = convert(draw_value(c), c.source, c.target, "duckdb")
                target.append(dup)
        if not clean and chance(15):  # target rows with a NULL key part
            for _ in range(rnd.randint(1, 2)):
                try:
                    r = stored({c.name: draw_value(c) for c in columns})
                except ConversionError:
                    continue
                if all(r[k] is not None for k in key):
                    r[rnd.choice(key)] = None
                target.append(r)

    # The SELECT's rows.
    source: list[Row] = []
    in_target = list(pre_images)
    if strategy == "full_merge" and in_target and chance(85):
        # delete none, a few, most or all of the target's rows
        keep = pick({1.0: 15, 0.9: 15, 0.8: 15, 0.7: 15, 0.6: 10, 0.4: 10, 0.2: 10, 0.0: 10})
        keys = [k for k in in_target if rnd.random() < keep]
        keys += [k for k in pool if k not in pre_images and chance(50)]
    elif pool and not chance(8):
        allow_dups = not clean and (dedupe or chance(12))
        if allow_dups:
            keys = [rnd.choice(pool) for _ in range(rnd.randint(1, 8))]
        else:
            keys = rnd.sample(pool, rnd.randint(1, len(pool)))
    else:
        keys = []
    for k in keys:
        if source and dedupe and not clean and chance(30):
            r = dict(rnd.choice(source))  # an exact duplicate row, or one that ties
            if chance(40):
                order = {t.column for t in opts.dedup_order_by}
                c = rnd.choice(value_cols)
                if c.name not in order:
                    r[c.name] = draw_value(c)
            source.append(r)
            continue
        if k in pre_images and chance(40):
            r = dict(pre_images[k])  # the row the target holds: unchanged unless mutated
            if chance(40):
                c = rnd.choice(value_cols)
                r[c.name] = draw_value(c)
            elif chance(40):
                c = rnd.choice(value_cols)
                r[c.name] = equivalent(r[c.name], c.source, c.target)
        else:
            r = fresh_row(k)
        source.append(r)
    if source and not clean and chance(4):
        rnd.choice(source)[rnd.choice(key)] = None
    unstorable = [c for c in value_cols if PAIRS.get((c.source, c.target), ([], []))[1]]
    if source and unstorable and not clean and chance(20):  # a value the target cannot store
        c = rnd.choice(unstorable)
        rnd.choice(source)[c.name] = draw_value(c, False, 100)

    # incremental_predicates on a numeric target column; SELECT rows outside them stay.
    numeric = [c.name for c in columns if c.target in INT_LIKE or decimal_of(c.target)]
    if target and numeric and not clean and chance(45):
        column = rnd.choice(numeric)
        values = [math.floor(t[column]) for t in target if t[column] is not None]
        values = [v for v in values if abs(v) < 2**62] or [0]
        opts.predicate = (column, rnd.choice(values))
        opts.on_key_outside = pick({None: 45, "fail": 10, "insert": 33, "skip": 6, "delete": 6})

    if strategy == "full_merge":
        opts.max_delete_fraction = 1 if clean else pick(
            {None: 36, 0: 12, 0.3: 15, 1: 30, -0.1: 3, 1.5: 2, "half": 2}
        )

    contract = contract_column = None
    # (dbt's contract SQL does not escape a quote character inside a column name: a plain
    # `table` model fails the same way, so such names are left out of contracts)
    if not clean and not any(q in n for n in taken for q in '"`') and chance(25):
        contract = "ok" if mode.startswith("empty") else pick(
            {"ok": 60, "wrong_type": 20, "extra_column": 20}
        )
        if contract == "wrong_type":
            contract_column = rnd.choice(columns).name
        elif contract == "extra_column":
            contract_column = rnd.choice(value_cols).name

    return Case(
        "", strategy, key, columns, source, target, opts, shape=shape,
        contract=contract, contract_column=contract_column, nondet=nondet,
        random_column=random_column, mode=mode, threads=threads, same_name=same_name,
    )  # fmt: skip


def equivalent(value, src: str, tgt: str):
    """Another SELECT value the target stores as it stores `value` (on both engines), or
    `value` itself when there is none: an unchanged row written differently."""
    if value is None or src == tgt:
        return value
    if isinstance(value, float):
        candidates = [math.nextafter(value, math.inf), math.nextafter(value, -math.inf)]
    elif isinstance(value, Decimal):
        step = Decimal(1).scaleb(value.as_tuple().exponent)
        candidates = []
        for v in (value + step, value - step):
            try:  # a value at the edge of its type has a neighbour on one side only
                candidates.append(in_type(v, src))
            except ConversionError:
                pass
    elif isinstance(value, dt.datetime):
        candidates = [value.replace(hour=(value.hour + 7) % 24)]
    elif isinstance(value, str) and tgt == "uuid":
        candidates = [value.upper(), value.lower(), value.replace("-", "")]
    elif isinstance(value, str):
        candidates = [value.swapcase()]
    elif isinstance(value, int):  # within the SELECT's type (2**63 - 1 has no upper neighbour)
        lo, hi = INT_RANGES.get(src, (-math.inf, math.inf))
        candidates = [v for v in (value + 1, value - 1) if lo <= v <= hi]
    else:
        candidates = []
    for v in candidates:
        if v != value and all(
            storable(v, src, tgt)
            and convert(v, src, tgt, e) == convert(value, src, tgt, e)
            for e in ("duckdb", "spark")
        ):
            return v
    return value


def pair_twins(cases: list[Case]) -> None:
    """Cases that share their table name with another case, in pairs, in two schemas."""
    twins = [c for c in cases if c.same_name]
    for a, b in zip(twins[::2], twins[1::2], strict=False):
        b.table = a.table
        b.schema_suffix = "_twin"
        b.threads = a.threads = 4
    if len(twins) % 2:
        twins[-1].same_name = False


def with_conditions(case: Case) -> Case | None:
    """A copy of `case` with merge_update_condition and/or delete_condition on an integer or
    decimal value column of one type in the SELECT and the table (drawn from a generator of its
    own), or None when the case has no such column or is of a kind the conditions are not
    generated with: insert (refused), no table yet, --empty/--full-refresh first runs, random()
    SELECTs, broken contracts, twins."""
    if (case.strategy == "insert" or case.target is None or case.mode != "run" or case.nondet
            or case.contract not in (None, "ok") or case.same_name):
        return None
    usable = [c.name for c in case.columns if c.name not in case.key and c.source == c.target
              and (c.source in ("int", "int32") or c.source.startswith("dec"))
              and not any(q in c.name for q in "'\"`\\")]
    rnd = random.Random(f"conditions:{case.id}:{case.shape}")
    if not usable:
        return None
    opts = dataclasses.replace(case.opts)
    what = rnd.choice(["update", "delete", "both"])
    if what in ("update", "both"):
        opts.update_condition = rnd.choice(usable)
    if what in ("delete", "both"):
        column = rnd.choice(usable)
        values = [r[column] for r in case.source if r[column] is not None] or [0]
        opts.delete_condition = (column, rnd.choice(values))
    return dataclasses.replace(case, id="c" + case.id, table="c" + case.table, opts=opts)


def with_dry_run(case: Case) -> Case | None:
    """A copy of `case` with config(dry_run=true), or None for a random() SELECT (a dry run's
    statistics could not be told from the table). Every check must fail as in a real run; a
    run that passes them reports the exact statistics of the merge it would make (of the build,
    for a first build or --full-refresh) and must leave the table, or its absence, as it was."""
    if case.nondet:
        return None
    return dataclasses.replace(case, id="d" + case.id, table="d" + case.table, dry_run=True)


#: Names of the soft-delete column of with_soft_delete: plain, internal, reserved and odd ones.
SOFT_DELETE_NAMES = ["is_deleted", "Deleted", "dbt_merge_soft_delete", "DBT_MERGE_ACTION", "select",
                     "it's", "two  spaces", "Mixed Case"]


def with_soft_delete(case: Case) -> Case | None:
    """A copy of `case` with soft_delete_column: a boolean column added to the SELECT (mostly
    false, some NULL or true) and to the table (a third of its rows soft-deleted already); for
    half of the full_merge ones, a third of the SELECT's rows dropped and, unless set,
    max_delete_fraction=1. None for a case that cannot take it: not full_merge and no
    delete_condition, no table yet, a random() SELECT, or no free name."""
    if (case.target is None or case.nondet
            or not (case.strategy == "full_merge" or case.opts.delete_condition)):
        return None
    rnd = random.Random(f"soft:{case.id}:{case.shape}")
    taken = {n.lower() for n in case.names}
    free = [n for n in SOFT_DELETE_NAMES if n.lower() not in taken]
    if not free:
        return None
    name = rnd.choice(free)

    def value(weights: tuple[int, int, int]):
        return rnd.choices([False, None, True], weights)[0]

    source = [{**r, name: value((75, 10, 15))} for r in case.source]
    target = [{**r, name: value((55, 10, 35))} for r in case.target]
    opts = dataclasses.replace(case.opts, soft_delete=name)
    if case.strategy == "full_merge" and rnd.random() < 0.5:
        # more keys gone from the SELECT, and the guard often lifted: more rows to soft-delete
        source = [r for r in source if rnd.random() > 0.35]
        if opts.max_delete_fraction is None:
            opts.max_delete_fraction = 1
    return dataclasses.replace(case, id="s" + case.id, table="s" + case.table, opts=opts,
                               columns=[*case.columns, Column(name, "bool", "bool")],
                               source=source, target=target)


#: Session time zones of with_time_zones: UTC, behind and ahead of it, a 45-minute offset.
TIME_ZONES = ["UTC", "America/New_York", "Asia/Kolkata", "Pacific/Chatham"]


def with_time_zones(case: Case) -> Case | None:
    """A copy of `case` (DuckDB) run in another session time zone, with its TIMESTAMP columns
    (keys and values of one type in the SELECT and the table) turned into TIMESTAMP WITH TIME
    ZONE: in the table only, in the SELECT only, or in both (the values stand for UTC instants).
    A merge converting an instant to a wall-clock time or back is refused (`time_zone`); one of
    instants alone must match and count alike in every zone (a random() SELECT: only that).
    None for a case without such a column, a broken contract or a twin."""
    if case.contract not in (None, "ok") or case.same_name:
        return None
    stamps = [c.name for c in case.columns if c.source == c.target == "ts"]
    if not stamps:
        return None
    rnd = random.Random(f"tz:{case.id}:{case.shape}")
    source, target = rnd.choice([("ts", "tstz"), ("tstz", "ts"), ("tstz", "tstz"),
                                 ("tstz", "tstz")])
    if case.nondet:  # a random() SELECT is checked for invariants of a run that succeeds
        source = target = "tstz"
    columns = [Column(c.name, source, target) if c.name in stamps else c for c in case.columns]
    return dataclasses.replace(case, id="z" + case.id, table="z" + case.table, columns=columns,
                               time_zone=rnd.choice(TIME_ZONES))


#: How with_collations makes DuckDB compare text by a collation: the session's
#: default_collation (nocase, noaccent), or the table's text columns declared COLLATE NOCASE.
COLLATIONS = ["nocase", "noaccent", "column"]


def with_collations(case: Case) -> Case | None:
    """A copy of `case` (DuckDB) whose text keys and values differ from the table's only by
    case or accent: every text value gets a leading 'é', and every other SELECT row has its
    text values' case swapped (or that accent dropped), and the merge runs where DuckDB would
    compare text by a collation (COLLATIONS). The merge judges text byte for byte, so the
    reference model, which knows no collation, says what it must do: 'a' and 'A' are two keys,
    a case-only change is an update. None for a case without a text column, with an option
    that compares a text column in the model's own SQL (a predicate, a condition,
    dedup_order_by: the collation applies there), a random() SELECT, a broken contract or a
    twin."""
    if case.contract not in (None, "ok") or case.same_name or case.nondet:
        return None
    text = [c.name for c in case.columns if c.source == "str" and c.target in ("str", "nocase")]
    opts = case.opts
    compared = {t.column for t in opts.dedup_order_by}
    compared |= {x[0] for x in (opts.predicate, opts.delete_condition) if x is not None}
    compared |= {opts.update_condition} if opts.update_condition else set()
    if not text or compared & set(text):
        return None
    rnd = random.Random(f"collation:{case.id}:{case.shape}")
    how = rnd.choice(COLLATIONS)

    def lettered(row: Row) -> Row:  # every text value holds a letter with case and accent
        return {k: "é" + v if k in text and isinstance(v, str) else v for k, v in row.items()}

    def varied(row: Row) -> Row:  # the same text, but for its case (or accent)
        def vary(v):
            return v.replace("é", "e", 1) if how == "noaccent" else v.swapcase()

        return {k: vary(v) if k in text and isinstance(v, str) else v for k, v in row.items()}

    source = [varied(lettered(r)) if i % 2 else lettered(r) for i, r in enumerate(case.source)]
    target = None if case.target is None else [lettered(r) for r in case.target]
    columns = case.columns
    if how == "column":
        columns = [Column(c.name, c.source, "nocase") if c.name in text else c for c in columns]
    return dataclasses.replace(case, id="c" + case.id, table="c" + case.table, columns=columns,
                               source=source, target=target,
                               collation=None if how == "column" else how)


@contextmanager
def _without_local_constants() -> Iterator[None]:
    """Hypothesis (6.131 on) also draws literal constants it finds in the project's modules
    loaded at that moment, so one derandomized strategy gave other cases in a full `make test`
    (every test module loaded) than in one file's run, and the case-mix guards failed only
    there. The case set must be the same in every run: draw without those constants."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - an older hypothesis has no such constants
        yield
        return
    original = getattr(providers, "_get_local_constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if original is None or cache is None:  # pragma: no cover
        yield
        return
    empty = providers.Constants()
    providers._get_local_constants = lambda: empty
    cache.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.cache.clear()


def generate_cases(strategy: str, n: int) -> list[Case]:
    """`n` cases of one strategy, drawn under the DBT_MERGE_PROFILE settings profile:
    of as many different shapes as hypothesis gives within 1.5 n examples."""
    drawn: list[Case] = []

    @settings(settings.get_profile(PROFILE), max_examples=n + n // 2)
    @given(case_strategy(strategy))
    def collect(case: Case) -> None:
        drawn.append(case)

    if PROFILE == "long":
        collect = seed(SEED)(collect)
    with _without_local_constants():
        collect()
    first = {id(c) for c in {c.shape: c for c in reversed(drawn)}.values()}
    chosen = {id(c) for c in sorted(drawn, key=lambda c: id(c) not in first)[:n]}
    cases = [c for c in drawn if id(c) in chosen]
    assert len(cases) == n, f"{strategy}: hypothesis gave {len(cases)} cases, not {n}"
    for i, case in enumerate(cases):
        case.id = f"{strategy[:3]}{i:04d}"
        case.table = case.model
    pair_twins(cases)
    return cases
