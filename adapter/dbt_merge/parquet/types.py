"""Which DuckDB types a Parquet file stores as they are: pure functions over type names.

DuckDB writes some types to Parquet as something else (checked on DuckDB 2.0):

| type | stored as | what the package does |
|---|---|---|
| HUGEINT, UHUGEINT | DOUBLE (rounded) | converted to DECIMAL(38,0); 10^38 or more refused |
| INTERVAL | months, days, milliseconds | kept; sub-millisecond values refused |
| TIME WITH TIME ZONE | the same instant at +00:00 | converted to that before any check |
| fixed-size ARRAY (T[n]) | LIST (T[]) | converted to T[] (nested ones too) |
| UNION | a STRUCT with a tag | refused: cast it to one member type, or a STRUCT |

So the source is staged *as the files will store it*: every check (NULL or duplicate keys),
the matching and the change detection see the stored values, on the first build as on every
later merge. Nested HUGEINT, INTERVAL and TIME WITH TIME ZONE fields are refused (casting a
field inside a STRUCT or LIST is the user's choice to make).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DECIMAL_FOR_HUGEINT = "DECIMAL(38,0)"
DECIMAL_LIMIT = "99999999999999999999999999999999999999"  # 10^38 - 1

_QUOTED = re.compile(r'"(?:[^"]|"")*"')
_FIXED_ARRAY = re.compile(r"\[\d+\]")
_QUOTED_OR_FIXED = re.compile(r'("(?:[^"]|"")*")|\[\d+\]')


def _bare(dtype: str) -> str:
    """The type name with quoted field names blanked (a field may be called "interval")."""
    return _QUOTED.sub('""', dtype.upper())


@dataclass(frozen=True)
class Stored:
    """How one source column is staged: `expression` (with `{c}` for the quoted column) gives
    the value the files will hold; `check` (with `{c}`), when set, is true for a value the
    files cannot hold exactly, explained by `problem`."""

    expression: str
    dtype: str
    check: str | None = None
    problem: str = ""
    fix: str = ""


def stored(name: str, dtype: str) -> Stored | str | None:
    """None when Parquet stores `dtype` as it is; a Stored conversion; or a refusal message
    (naming the column and what to cast it to)."""
    bare = _bare(dtype)
    top = bare.strip()
    if re.search(r"\bUNION\s*\(", bare):
        return (
            f"column '{name}' has type {dtype}, which a Parquet file stores as a STRUCT with a "
            "tag, so it would not read back as the SELECT's type. Cast it to one of its member "
            "types, or build a STRUCT, in the SELECT."
        )
    if top in ("HUGEINT", "UHUGEINT"):
        return Stored(
            "cast({c} as " + DECIMAL_FOR_HUGEINT + ")",
            DECIMAL_FOR_HUGEINT,
            f"abs({{c}}) > {DECIMAL_LIMIT}",
            f"has type {top}, which Parquet stores as DOUBLE (rounded), so the dataset stores it "
            f"as {DECIMAL_FOR_HUGEINT}, and a value does not fit",
            "Cast it to DOUBLE (rounded) or VARCHAR in the SELECT.",
        )
    if top == "INTERVAL":
        return Stored(
            "{c}",
            "INTERVAL",
            "datepart('microsecond', {c}) % 1000 <> 0",
            "has type INTERVAL, which Parquet stores in milliseconds, and a value has microseconds",
            "Round it to milliseconds, or store epoch_us(...) as BIGINT, in the SELECT.",
        )
    if top == "TIME WITH TIME ZONE":
        return Stored("timezone('UTC', {c})", dtype)
    for word, fix in (
        (r"\bU?HUGEINT\b", "DECIMAL(38,0) or BIGINT"),
        (r"\bINTERVAL\b", "BIGINT (epoch_us) or VARCHAR"),
        (r"\bTIME WITH TIME ZONE\b", "TIME or VARCHAR"),
    ):
        if re.search(word, bare):
            return (
                f"column '{name}' has type {dtype}, and a Parquet file does not store the "
                f"{re.search(word, bare).group(0)} inside it exactly. Cast that field to {fix} "
                "in the SELECT."
            )
    if _FIXED_ARRAY.search(bare):
        as_list = _QUOTED_OR_FIXED.sub(lambda m: m.group(1) or "[]", dtype)
        return Stored("cast({c} as " + as_list + ")", as_list)
    return None
