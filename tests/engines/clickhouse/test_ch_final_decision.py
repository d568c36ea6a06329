"""The FINAL decision table, with no database."""

from __future__ import annotations

from dataclasses import replace

import pytest
from dbt_merge.clickhouse.engines import EngineInfo, Family, parse_engine
from dbt_merge.clickhouse.final_decision import (
    FinalNotSupportedError,
    decide,
    parse_use_final,
)

NEEDS_FINAL = [
    "ReplacingMergeTree",
    "CollapsingMergeTree",
    "VersionedCollapsingMergeTree",
    "CoalescingMergeTree",
]
NO_FINAL_BY_DEFAULT = ["SummingMergeTree", "AggregatingMergeTree"]


def _never() -> bool:
    raise AssertionError("probe must not run for a known engine")


def _engine(name: str) -> EngineInfo:
    return parse_engine(name, name)


@pytest.mark.parametrize("prefix", ["", "Replicated", "Shared"])
@pytest.mark.parametrize("base", NEEDS_FINAL)
def test_collapsing_engines_use_final_by_default(prefix, base):
    decision = decide(_engine(prefix + base), None, _never)
    assert decision.use_final is True
    assert prefix + base in decision.reason


@pytest.mark.parametrize("prefix", ["", "Replicated", "Shared"])
@pytest.mark.parametrize("base", NO_FINAL_BY_DEFAULT)
def test_aggregating_engines_skip_final_by_default_but_accept_it(prefix, base):
    engine = _engine(prefix + base)
    assert decide(engine, None, _never).use_final is False
    assert decide(engine, True, _never).use_final is True


@pytest.mark.parametrize("base", NEEDS_FINAL + NO_FINAL_BY_DEFAULT + ["MergeTree", "Log"])
def test_use_final_false_never_uses_final_nor_probes(base):
    decision = decide(_engine(base), False, _never)
    assert decision == decision.__class__(False, "use_final: false")


@pytest.mark.parametrize("name", ["MergeTree", "View"])
def test_forcing_final_on_an_engine_without_it_fails_naming_source_and_engine(name):
    engine = parse_engine(name, name, "SELECT 1")
    assert decide(engine, None, _never).use_final is False
    with pytest.raises(FinalNotSupportedError, match=rf"source shop\.orders: .*{name}"):
        decide(engine, True, _never, source="shop.orders")


def test_parameterized_view_never_takes_final():
    engine = parse_engine("View", "", "SELECT {x:UInt8}")
    assert decide(engine, None, _never).use_final is False
    with pytest.raises(FinalNotSupportedError):
        decide(engine, True, _never)


@pytest.mark.parametrize("supported", [True, False])
def test_unknown_engine_follows_the_probe(supported):
    calls = []

    def probe() -> bool:
        calls.append(1)
        return supported

    engine = _engine("MaterializedView")
    assert decide(engine, None, probe).use_final is supported
    assert "probed" in decide(engine, None, probe).reason
    if supported:
        assert decide(engine, True, probe).use_final is True
    else:
        with pytest.raises(FinalNotSupportedError, match="MaterializedView"):
            decide(engine, True, probe, source="s.t")


def test_distributed_is_judged_by_its_target():
    dist = parse_engine("Distributed", "Distributed('c', 'db', 'local_t')")
    summing = replace(dist, target=_engine("ReplicatedSummingMergeTree"))
    replacing = replace(dist, target=_engine("ReplicatedReplacingMergeTree"))
    assert decide(summing, None, _never).use_final is False
    decision = decide(replacing, None, _never)
    assert decision.use_final is True
    assert "Distributed over ReplicatedReplacingMergeTree" in decision.reason


def test_unresolved_distributed_is_probed():
    dist = parse_engine("Distributed", "Distributed('c')")
    assert dist.family is Family.DISTRIBUTED
    assert decide(dist, None, lambda: True).use_final is True


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), (True, True), (False, False), ("true", True), ("False", False)],
)
def test_parse_use_final(value, expected):
    assert parse_use_final(value) is expected


def test_parse_use_final_rejects_other_values():
    with pytest.raises(ValueError, match="source a.b: use_final is 'yes'"):
        parse_use_final("yes", "a.b")
