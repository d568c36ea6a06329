"""Parsing of system.tables engine/engine_full: every engine, with and without parameters."""

from __future__ import annotations

import pytest
from dbt_merge.clickhouse.engines import Family, engine_args, parse_engine, split_args

SETTINGS = " ORDER BY k SETTINGS index_granularity = 8192"
KEEPER = "'/clickhouse/tables/{uuid}/{shard}', '{replica}'"


@pytest.mark.parametrize("prefix", ["", "Replicated", "Shared"])
@pytest.mark.parametrize(
    ("base", "args", "family", "expected"),
    [
        ("MergeTree", "", Family.MERGE_TREE, {}),
        ("ReplacingMergeTree", "", Family.REPLACING, {"version_column": None}),
        ("ReplacingMergeTree", "ver", Family.REPLACING, {"version_column": "ver"}),
        (
            "ReplacingMergeTree",
            "ver, is_deleted",
            Family.REPLACING,
            {"version_column": "ver", "is_deleted_column": "is_deleted"},
        ),
        ("CollapsingMergeTree", "sign", Family.COLLAPSING, {"sign_column": "sign"}),
        (
            "VersionedCollapsingMergeTree",
            "sign, ver",
            Family.VERSIONED_COLLAPSING,
            {"sign_column": "sign", "version_column": "ver"},
        ),
        ("CoalescingMergeTree", "", Family.COALESCING, {"columns": ()}),
        ("CoalescingMergeTree", "(a, b)", Family.COALESCING, {"columns": ("a", "b")}),
        ("AggregatingMergeTree", "", Family.AGGREGATING, {}),
        ("SummingMergeTree", "", Family.SUMMING, {"columns": ()}),
        ("SummingMergeTree", "(a, b)", Family.SUMMING, {"columns": ("a", "b")}),
        ("SummingMergeTree", "a", Family.SUMMING, {"columns": ("a",)}),
    ],
)
def test_merge_tree_family(prefix, base, args, family, expected):
    engine = prefix + base
    if prefix and args:
        full_args = f"{KEEPER}, {args}"
    elif prefix:
        full_args = KEEPER
    else:
        full_args = args
    engine_full = engine + (f"({full_args})" if full_args else "") + SETTINGS
    info = parse_engine(engine, engine_full)
    assert info.family is family
    assert info.engine == engine
    assert info.replication == (prefix or None)
    for key, value in expected.items():
        assert getattr(info, key) == value, key


def test_replicated_without_keeper_arguments_keeps_version_column():
    info = parse_engine(
        "ReplicatedReplacingMergeTree", "ReplicatedReplacingMergeTree(ver) ORDER BY k"
    )
    assert info.family is Family.REPLACING
    assert info.version_column == "ver"


def test_quoted_identifiers_are_unquoted():
    info = parse_engine(
        "VersionedCollapsingMergeTree", 'VersionedCollapsingMergeTree(`my sign`, "v") ORDER BY k'
    )
    assert (info.sign_column, info.version_column) == ("my sign", "v")


def test_keeper_path_with_commas_and_parentheses():
    full = "ReplicatedCollapsingMergeTree('/ch/t/{a,b}(x)', 'r\\'1', s) ORDER BY (k, f(x))"
    assert parse_engine("ReplicatedCollapsingMergeTree", full).sign_column == "s"


def test_split_args_respects_nesting_and_quotes():
    assert split_args("a, (b, c), 'd,e', f(g, h)") == ["a", "(b, c)", "'d,e'", "f(g, h)"]
    assert split_args("") == []
    assert engine_args("MergeTree ORDER BY (a, b)", "MergeTree") == []


def test_views():
    assert parse_engine("View", "", "SELECT * FROM t").family is Family.VIEW
    assert (
        parse_engine("View", "", "SELECT * FROM t WHERE k > {min_k:UInt32}").family
        is Family.PARAMETERIZED_VIEW
    )


@pytest.mark.parametrize(
    ("engine_full", "target"),
    [
        ("Distributed('c', 'db', 'local_t')", ("db", "local_t")),
        ("Distributed('c', 'db', 'local_t', rand())", ("db", "local_t")),
        ("Distributed(c, db, local_t, cityHash64(k), 'policy')", ("db", "local_t")),
        ("Distributed('c', currentDatabase(), 'local_t')", (None, "local_t")),
        ("Distributed('c')", None),
    ],
)
def test_distributed_points_to_its_table(engine_full, target):
    info = parse_engine("Distributed", engine_full)
    assert info.family is Family.DISTRIBUTED
    assert info.distributed_target == target
    assert info.effective is info


@pytest.mark.parametrize(
    "engine", ["Log", "Memory", "MaterializedView", "GraphiteMergeTree", "Kafka", "Null"]
)
def test_anything_else_is_unknown(engine):
    assert parse_engine(engine, f"{engine}('x')").family is Family.UNKNOWN


def test_describe_names_the_columns():
    info = parse_engine("ReplacingMergeTree", "ReplacingMergeTree(ver, del) ORDER BY k")
    assert info.describe() == "ReplacingMergeTree(version=ver, is_deleted=del)"
