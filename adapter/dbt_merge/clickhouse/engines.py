"""Parse ClickHouse `system.tables.engine` / `engine_full` into a typed result (no I/O)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import Enum


class Family(str, Enum):
    MERGE_TREE = "MergeTree"
    REPLACING = "ReplacingMergeTree"
    COLLAPSING = "CollapsingMergeTree"
    VERSIONED_COLLAPSING = "VersionedCollapsingMergeTree"
    COALESCING = "CoalescingMergeTree"
    AGGREGATING = "AggregatingMergeTree"
    SUMMING = "SummingMergeTree"
    VIEW = "View"
    PARAMETERIZED_VIEW = "ParameterizedView"
    DISTRIBUTED = "Distributed"
    UNKNOWN = "unknown"


_MERGE_TREE_FAMILIES = {
    f.value: f
    for f in (
        Family.MERGE_TREE,
        Family.REPLACING,
        Family.COLLAPSING,
        Family.VERSIONED_COLLAPSING,
        Family.COALESCING,
        Family.AGGREGATING,
        Family.SUMMING,
    )
}
_REPLICATION_PREFIXES = ("Replicated", "Shared")
_QUERY_PARAMETER = re.compile(r"\{\s*\w+\s*:\s*[^{}]+\}")


@dataclass(frozen=True)
class EngineInfo:
    """What a table's engine means for reading it: its family and the columns it collapses on."""

    engine: str
    family: Family
    replication: str | None = None
    version_column: str | None = None
    is_deleted_column: str | None = None
    sign_column: str | None = None
    columns: tuple[str, ...] = ()
    distributed_target: tuple[str | None, str] | None = None
    target: EngineInfo | None = field(default=None, compare=False)

    @property
    def effective(self) -> EngineInfo:
        """The engine that decides FINAL: a Distributed table's resolved target, else itself."""
        return self.target.effective if self.target is not None else self

    def describe(self) -> str:
        """A short human description, e.g. `ReplicatedReplacingMergeTree(ver=v, is_deleted=d)`."""
        parts = []
        if self.version_column:
            parts.append(f"version={self.version_column}")
        if self.is_deleted_column:
            parts.append(f"is_deleted={self.is_deleted_column}")
        if self.sign_column:
            parts.append(f"sign={self.sign_column}")
        if self.columns:
            parts.append("columns=" + ",".join(self.columns))
        if self.distributed_target:
            db, table = self.distributed_target
            parts.append("-> " + (f"{db}.{table}" if db else table))
        text = self.engine + (f"({', '.join(parts)})" if parts else "")
        if self.target is not None:
            text += f" [{self.target.describe()}]"
        return text


def split_args(text: str) -> list[str]:
    """Split a top-level comma-separated argument list, respecting quotes and brackets."""
    args: list[str] = []
    depth = 0
    quote: str | None = None
    current: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            current.append(ch)
            if ch == "\\" and i + 1 < len(text):
                current.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
            current.append(ch)
        elif ch in "([":
            depth += 1
            current.append(ch)
        elif ch in ")]":
            depth -= 1
            current.append(ch)
        elif ch == "," and depth == 0:
            args.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    tail = "".join(current).strip()
    if tail or args:
        args.append(tail)
    return args


def engine_args(engine_full: str, engine: str) -> list[str]:
    """The arguments of the engine clause at the start of `engine_full` (empty if none)."""
    text = engine_full.strip()
    if not text.startswith(engine):
        return []
    rest = text[len(engine) :]
    if not rest.startswith("("):
        return []
    depth = 0
    quote: str | None = None
    for i, ch in enumerate(rest):
        if quote:
            if ch == quote and rest[i - 1] != "\\":
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return split_args(rest[1:i])
    return []


def unquote(name: str) -> str:
    """Strip ClickHouse identifier or string quotes from one name."""
    name = name.strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "`\"'":
        return name[1:-1].replace("\\" + name[0], name[0])
    return name


def _columns(arg: str) -> tuple[str, ...]:
    arg = arg.strip()
    if arg.startswith("(") and arg.endswith(")"):
        return tuple(unquote(a) for a in split_args(arg[1:-1]) if a)
    return (unquote(arg),)


def _is_literal(arg: str) -> bool:
    return arg.startswith("'")


def _merge_tree(engine: str, engine_full: str) -> EngineInfo | None:
    replication = next((p for p in _REPLICATION_PREFIXES if engine.startswith(p)), None)
    base = engine[len(replication) :] if replication else engine
    family = _MERGE_TREE_FAMILIES.get(base)
    if family is None:
        return None
    args = engine_args(engine_full, engine)
    if replication:
        # Replicated/Shared engines may take the keeper path and replica name first (literals).
        for _ in range(2):
            if args and _is_literal(args[0]):
                args = args[1:]
    args = [a for a in args if a]
    info = EngineInfo(engine=engine, family=family, replication=replication)
    if family is Family.REPLACING:
        return _with(info, version_column=_at(args, 0), is_deleted_column=_at(args, 1))
    if family is Family.COLLAPSING:
        return _with(info, sign_column=_at(args, 0))
    if family is Family.VERSIONED_COLLAPSING:
        return _with(info, sign_column=_at(args, 0), version_column=_at(args, 1))
    if family in (Family.SUMMING, Family.COALESCING) and args:
        return _with(info, columns=_columns(args[0]))
    return info


def _at(args: list[str], index: int) -> str | None:
    return unquote(args[index]) if len(args) > index else None


def _with(info: EngineInfo, **changes: object) -> EngineInfo:
    return replace(info, **changes)


def _distributed(engine_full: str) -> EngineInfo:
    args = engine_args(engine_full, "Distributed")
    target = None
    if len(args) >= 3:
        database = unquote(args[1])
        # An expression such as currentDatabase() means "the Distributed table's own database".
        target = (None if "(" in database else database, unquote(args[2]))
    return EngineInfo(engine="Distributed", family=Family.DISTRIBUTED, distributed_target=target)


def parse_engine(engine: str, engine_full: str = "", as_select: str = "") -> EngineInfo:
    """Classify one table from its `system.tables` row (`engine`, `engine_full`, `as_select`)."""
    engine = engine.strip()
    if engine == "View":
        family = Family.PARAMETERIZED_VIEW if _QUERY_PARAMETER.search(as_select) else Family.VIEW
        return EngineInfo(engine=engine, family=family)
    if engine == "Distributed":
        return _distributed(engine_full)
    parsed = _merge_tree(engine, engine_full)
    if parsed is not None:
        return parsed
    return EngineInfo(engine=engine, family=Family.UNKNOWN)
