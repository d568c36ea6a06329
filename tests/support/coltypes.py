"""Logical column types, their names on each engine, and how a value is stored in another type.

A logical type is one of TYPES, or `dec(p,s)`. Tests create tables with exact types from these
names (harness.py), and the reference model converts a SELECT's value into the target column's
type the way the engine stores it (SEMANTICS_10 §4), per engine:

- decimal -> integer: DuckDB rounds half away from zero, Spark truncates toward zero;
- double -> integer: DuckDB rounds half to even, Spark truncates toward zero;
- decimal -> decimal of a smaller scale: half away from zero on both;
- double -> float (real): IEEE round to nearest float32;
- timestamp -> date: the day (both engines run in UTC here);
- varchar -> uuid (DuckDB): parsed, so differently written UUIDs are one value;
- varchar -> varchar collate nocase (DuckDB): stored as written, and compared byte for byte
  as every text value is (the merge ignores the collation: 'a' and 'A' are two keys).

A value that does not fit (integer or decimal overflow, NaN or infinity into an integer, a
string that is no UUID) raises ConversionError.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
import uuid
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal

TYPES = ["int", "int32", "float", "real", "str", "nocase", "uuid", "date", "ts", "tstz", "bool"]
DUCKDB_ONLY = {"nocase", "uuid", "tstz"}

_DUCKDB = {
    "int": "BIGINT",
    "int32": "INTEGER",
    "float": "DOUBLE",
    "real": "FLOAT",
    "str": "VARCHAR",
    "nocase": "VARCHAR COLLATE NOCASE",
    "uuid": "UUID",
    "date": "DATE",
    "ts": "TIMESTAMP",
    "tstz": "TIMESTAMP WITH TIME ZONE",  # values: naive datetimes standing for UTC instants
    "bool": "BOOLEAN",
}
_SPARK = {
    "int": "bigint",
    "int32": "int",
    "float": "double",
    "real": "float",
    "str": "string",
    "date": "date",
    "ts": "timestamp",
    "bool": "boolean",
}
INT_RANGES = {"int": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1)}
_DEC = re.compile(r"dec\((\d+),(\d+)\)$")


class ConversionError(ValueError):
    """The value cannot be stored in the target type."""


def decimal_of(typ: str) -> tuple[int, int] | None:
    m = _DEC.match(typ)
    return (int(m.group(1)), int(m.group(2))) if m else None


def engine_type(typ: str, engine: str) -> str:
    """The type's name in DDL (and in a dbt contract) on `engine`."""
    dec = decimal_of(typ)
    if dec:
        return f"{'DECIMAL' if engine == 'duckdb' else 'decimal'}({dec[0]},{dec[1]})"
    names = _DUCKDB if engine == "duckdb" else _SPARK
    if typ not in names:
        raise KeyError(f"type {typ!r} does not exist on {engine}")
    return names[typ]


def family(typ: str) -> str:
    """number | string | temporal | boolean | other: the package refuses a key whose family
    differs between the SELECT and the target (check_key_types), unless one side is other."""
    if typ in INT_RANGES or typ in ("float", "real") or decimal_of(typ):
        return "number"
    return {"str": "string", "nocase": "string", "date": "temporal", "ts": "temporal",
            "tstz": "temporal"}.get(typ, "boolean" if typ == "bool" else "other")


def zone_kind(typ: str) -> str | None:
    """'instant' (TIMESTAMPTZ), 'wall_clock' (TIMESTAMP, DATE) or None: the package refuses a
    column converted from one kind to the other, which goes through the session time zone
    (check_column_types: the error kind `time_zone`)."""
    return {"tstz": "instant", "ts": "wall_clock", "date": "wall_clock"}.get(typ)


def quantize(value: Decimal, typ: str) -> Decimal:
    """A decimal as a `dec(p,s)` column holds it, or ConversionError when it overflows."""
    p, s = decimal_of(typ)
    d = Decimal(value).quantize(Decimal(1).scaleb(-s), rounding=ROUND_HALF_UP)
    if abs(d) >= Decimal(10) ** (p - s):
        raise ConversionError(f"{value} overflows {typ}")
    return d


def float32(value: float, engine: str) -> float:
    """The nearest float32 (struct packs a finite value beyond its range as infinity, as Spark
    stores it; DuckDB refuses it)."""
    f = struct.unpack("f", struct.pack("f", value))[0]
    if math.isinf(f) and math.isfinite(value) and engine != "spark":
        raise ConversionError(f"{value} overflows float")
    return f


def _to_int(value, src: str, tgt: str, engine: str) -> int:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConversionError(f"{value} into {tgt}")
        n = round(value) if engine == "duckdb" else math.trunc(value)  # round(): half to even
    elif isinstance(value, Decimal):
        rounding = ROUND_HALF_UP if engine == "duckdb" else ROUND_DOWN
        n = int(value.to_integral_value(rounding=rounding))
    else:
        try:
            n = int(value)  # an int, or a string only when a test builds a target from it
        except ValueError:
            raise ConversionError(f"{value!r} into {tgt}") from None
    lo, hi = INT_RANGES[tgt]
    if not lo <= n <= hi:
        raise ConversionError(f"{value} overflows {tgt}")
    return n


def convert(value, src: str, tgt: str, engine: str):
    """`value` of type `src` as a `tgt` column on `engine` stores it (ConversionError if it
    cannot). Values the reference cannot know (a random() column) pass through."""
    if value is None or not isinstance(value, int | float | str | Decimal | dt.date):
        return value
    if src == tgt:
        return value
    if tgt in INT_RANGES:
        return _to_int(value, src, tgt, engine)
    if decimal_of(tgt):
        return quantize(Decimal(value), tgt)
    if tgt == "float":
        return float(value)
    if tgt == "real":
        return float32(float(value), engine)
    if tgt == "date" and src == "ts":
        return value.date()
    if tgt == "ts" and src == "date":
        return dt.datetime.combine(value, dt.time())
    if tgt == "uuid" and src == "str":
        text = value.strip("{}") if value.startswith("{") and value.endswith("}") else value
        hexdigits = text.replace("-", "")
        if len(hexdigits) != 32 or not re.fullmatch(r"[0-9a-fA-F]{32}", hexdigits):
            raise ConversionError(f"{value!r} is not a UUID")
        return uuid.UUID(hexdigits)
    if tgt == "nocase" and src == "str":
        return value
    if tgt == "str" and src in INT_RANGES:
        return str(value)  # only to build a target whose key is a string (family mismatch)
    raise NotImplementedError(f"no conversion {src} -> {tgt}")
