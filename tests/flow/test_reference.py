"""The reference model on the examples of issue 10's semantics (no database): what the
differential tests expect of the package, stated once by hand."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest
from support.reference import MergeError, Options, OrderTerm, Stats, merge


def kinds(*args, **kwargs) -> tuple[str, ...]:
    with pytest.raises(MergeError) as e:
        merge(*args, **kwargs)
    return e.value.kinds


def test_keys_are_judged_as_the_target_stores_them():
    src = [{"k": Decimal("1.6"), "v": 1}, {"k": Decimal("2.4"), "v": 2}]
    types = {"k": ("dec(10,1)", "int"), "v": ("int", "int")}
    # DuckDB rounds both to 2: a duplicate key; Spark truncates: 1 and 2
    assert kinds("upsert", src, [], ["k"], types=types) == ("duplicate_key",)
    rows, stats = merge("upsert", src, [], ["k"], types=types, engine="spark")
    assert sorted(r["k"] for r in rows) == [1, 2] and stats.inserted == 2
    day = [{"k": dt.datetime(2024, 1, 1, h), "v": h} for h in (1, 23)]
    ts_date = {"k": ("ts", "date"), "v": ("int", "int")}
    assert kinds("upsert", day, [], ["k"], types=ts_date) == ("duplicate_key",)
    u = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    target = [{"k": uuid.UUID(u), "v": 1}]
    rows, stats = merge("upsert", [{"k": "{" + u.upper() + "}", "v": 2}], target, ["k"],
                        types={"k": ("str", "uuid"), "v": ("int", "int")})  # fmt: skip
    assert rows == [{"k": uuid.UUID(u), "v": 2}] and stats.updated == 1
    too_big = [{"k": 2**31, "v": 1}]
    assert kinds("upsert", too_big, [], ["k"], types={"k": ("int", "int32")}) == (
        "key_conversion",
    )
    assert kinds("upsert", [{"k": "1"}], [{"k": 1}], ["k"], types={"k": ("str", "int")}) == (
        "key_type",
    )


def test_values_are_compared_as_the_target_stores_them():
    target = [{"k": 1, "f": 1.100000023841858, "d": Decimal("1.01")}]
    source = [{"k": 1, "f": 1.1, "d": Decimal("1.005")}]
    types = {"k": ("int", "int"), "f": ("float", "real"), "d": ("dec(10,3)", "dec(10,2)")}
    _, stats = merge("upsert", source, target, ["k"], types=types)
    assert stats == Stats(unchanged=1, total=1)


def test_a_key_matching_several_target_rows_fails():
    target = [{"k": 1, "v": 1}, {"k": 1, "v": 2}, {"k": 2, "v": 3}, {"k": 2, "v": 4}]
    for strategy in ("upsert", "insert", "update", "full_merge", "deduplicate"):
        assert kinds(strategy, [{"k": 1, "v": 9}], target, ["k"],
                     Options(max_delete_fraction=1)) == ("target_duplicate_key",)  # fmt: skip
    rows, stats = merge("full_merge", [{"k": 3, "v": 9}], target, ["k"],
                        Options(max_delete_fraction=1))  # fmt: skip
    assert rows == [{"k": 3, "v": 9}] and stats == Stats(inserted=1, deleted=4, total=1)


def test_a_key_outside_the_predicates():
    target = [{"k": 1, "v": 1}, {"k": 5, "v": 5}]
    opts = Options(predicate=("k", 3))
    assert kinds("upsert", [{"k": 1, "v": 2}], target, ["k"], opts) == ("key_outside_predicates",)
    _, stats = merge("update", [{"k": 1, "v": 2}], target, ["k"], opts)
    assert stats == Stats(total=2)
    opts.on_key_outside = "insert"
    rows, stats = merge("upsert", [{"k": 1, "v": 2}], target, ["k"], opts)
    assert sorted(r["v"] for r in rows if r["k"] == 1) == [1, 2] and stats.inserted == 1
    opts.on_key_outside = "yes"
    assert kinds("update", [], target, ["k"], opts) == ("config_on_key_outside",)


def test_max_delete_fraction():
    target = [{"k": i} for i in range(10)]
    keep = [{"k": i} for i in range(5)]  # deletes 5 of 10
    assert merge("full_merge", keep, target, ["k"])[1].deleted == 5  # default 0.5
    assert kinds("full_merge", keep[:4], target, ["k"]) == ("mass_delete",)
    assert kinds("full_merge", keep, target, ["k"], Options(max_delete_fraction=0.3)) == (
        "mass_delete",
    )
    assert kinds("full_merge", [], target, ["k"]) == ("mass_delete",)
    assert merge("full_merge", [], target, ["k"], Options(max_delete_fraction=1))[0] == []
    assert merge("full_merge", target, target, ["k"], Options(max_delete_fraction=0))[1] == (
        Stats(unchanged=10, total=10)
    )
    for bad in (-0.1, 1.5, "half"):
        assert kinds("full_merge", keep, None, ["k"], Options(max_delete_fraction=bad)) == (
            "config_max_delete_fraction",
        )


def test_nan_sorts_above_every_number():
    rows = [{"k": 1, "x": float("inf")}, {"k": 1, "x": float("nan")}]
    opts = Options(dedup_order_by=[OrderTerm("x", descending=True)])
    got, _ = merge("deduplicate", rows, None, ["k"], opts)
    assert got[0]["x"] != got[0]["x"]  # NaN
