"""Decide whether a ClickHouse source is read with FINAL (pure: no I/O)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dbt_merge.clickhouse.engines import EngineInfo, Family

# family -> (supports FINAL, used by default, why). None = unknown until probed.
DECISION_TABLE: dict[Family, tuple[bool | None, bool | None, str]] = {
    Family.REPLACING: (
        True,
        True,
        "replaces rows by key at merge time; unmerged parts hold old versions",
    ),
    Family.COLLAPSING: (True, True, "cancels +1/-1 rows at merge time; unmerged parts hold both"),
    Family.VERSIONED_COLLAPSING: (
        True,
        True,
        "cancels +1/-1 rows per version at merge time; unmerged parts hold both",
    ),
    Family.COALESCING: (True, True, "fills a key's columns across rows at merge time"),
    Family.SUMMING: (
        True,
        False,
        "rows are partial sums: correct when aggregated by key downstream, FINAL is only a cost",
    ),
    Family.AGGREGATING: (
        True,
        False,
        "rows are partial aggregate states: correct when merged by key downstream",
    ),
    Family.MERGE_TREE: (
        False,
        False,
        "plain MergeTree does not collapse rows (ClickHouse rejects FINAL)",
    ),
    Family.VIEW: (False, False, "a view: ClickHouse accepts FINAL on it but ignores it"),
    Family.PARAMETERIZED_VIEW: (False, False, "a parameterized view: needs arguments, no FINAL"),
    Family.DISTRIBUTED: (None, None, "Distributed table whose target could not be resolved"),
    Family.UNKNOWN: (None, None, "unknown engine"),
}


class FinalNotSupportedError(ValueError):
    """`use_final: true` on a source whose engine cannot take FINAL."""


@dataclass(frozen=True)
class FinalDecision:
    use_final: bool
    reason: str


def parse_use_final(value: object, source: str = "") -> bool | None:
    """Normalize a `use_final` setting (bool, 'true'/'false' or unset) or raise on anything else."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(
        f"source {source}: use_final is {value!r}; accepted values are true, false or unset"
    )


def decide(
    engine: EngineInfo,
    use_final: bool | None,
    probe: Callable[[], bool],
    source: str = "",
) -> FinalDecision:
    """Apply the decision table; `probe` is called only when the engine's support is unknown."""
    effective = engine.effective
    supports, default, why = DECISION_TABLE[effective.family]
    name = effective.engine
    if effective is not engine:
        name = f"{engine.engine} over {effective.engine}"
    if use_final is False:
        return FinalDecision(False, "use_final: false")
    if supports is None:
        supports = probe()
        why = f"{why}: probed, FINAL {'supported' if supports else 'not supported'}"
        default = supports
    if use_final is True:
        if not supports:
            raise FinalNotSupportedError(
                f"source {source}: use_final is true but engine {name} cannot take FINAL ({why})"
            )
        return FinalDecision(True, "use_final: true")
    return FinalDecision(bool(default), f"default for {name}: {why}")
