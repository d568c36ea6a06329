"""What a merge did, as every Python front end returns it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class MergeResult:
    """The statistics of one merge (the materialization's console line, as numbers).

    inserted, updated, deleted, unchanged, total: the five counts (total: the target's rows
    afterwards, or as a dry run would leave them); held_back: matched rows that
    merge_update_condition kept (only when the merge has that condition); dry_run: nothing was
    written; skipped: why nothing was merged, when so; snapshot_id: the Iceberg snapshot the
    merge committed (none when it committed nothing or the table is not Iceberg); versions:
    strategy='history' only, the table's rows afterwards (total is then its current versions,
    and held_back its late rows).
    """

    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    total: int = 0
    held_back: int | None = None
    dry_run: bool = False
    skipped: str | None = None
    snapshot_id: int | None = None
    versions: int | None = None

    @classmethod
    def from_stats(cls, stats: Mapping[str, Any], snapshot_id: int | None = None) -> MergeResult:
        """From the flow's statistics dict (run_merge, count_changes)."""
        held_back = stats.get("held_back")
        versions = stats.get("versions")
        return cls(
            inserted=int(stats.get("inserted") or 0),
            updated=int(stats.get("updated") or 0),
            deleted=int(stats.get("deleted") or 0),
            unchanged=int(stats.get("unchanged") or 0),
            total=int(stats.get("total") or 0),
            held_back=None if held_back is None else int(held_back),
            dry_run=bool(stats.get("dry_run")),
            skipped=stats.get("skipped") or None,
            snapshot_id=snapshot_id,
            versions=None if versions is None else int(versions),
        )

    def as_dict(self) -> dict[str, Any]:
        """The five counts, then held_back, versions, dry_run, skipped and snapshot_id where they
        apply."""
        out: dict[str, Any] = {
            "inserted": self.inserted,
            "updated": self.updated,
            "deleted": self.deleted,
            "unchanged": self.unchanged,
            "total": self.total,
        }
        if self.held_back is not None:
            out["held_back"] = self.held_back
        if self.versions is not None:
            out["versions"] = self.versions
        if self.dry_run:
            out["dry_run"] = True
        if self.skipped:
            out["skipped"] = self.skipped
        if self.snapshot_id is not None:
            out["snapshot_id"] = self.snapshot_id
        return out


_DICT_READS = (
    "merge_parquet_dataset returns a MergeResult now (as merge_table and merge_dataframe do): "
    "read result.inserted, ..., or result.as_dict(). Reading it as a dict still works in this "
    "release and stops in the next one."
)


@dataclass(frozen=True, eq=False)
class DictReadableResult(MergeResult, dict):
    """A MergeResult that is still the dict merge_parquet_dataset returned before 0.2.0 (its
    documented keys, as as_dict() gives them): `result["inserted"]`, `result.get(...)`, `in`
    and `result == {...}` answer with a DeprecationWarning; what reads the dict whole
    (`json.dumps`, `dict()`, `{**result}`, `.items()`, pickle, copy) gets it without one, so
    that code running with warnings as errors can still serialize it. What the caller sets in
    the dict part stays there; the fields stay as the merge left them. Compared with a
    MergeResult it is one."""

    def __post_init__(self) -> None:
        dict.update(self, self.as_dict())

    def _as_dict_warned(self) -> dict[str, Any]:
        """The dict part, as the old dict was: it starts as as_dict() and keeps what the
        caller's code sets or deletes in it (the fields stay as the merge left them)."""
        import warnings

        warnings.warn(_DICT_READS, DeprecationWarning, stacklevel=3)
        return dict.copy(self)

    def __reduce__(self):
        # pickle and copy would read the dict part through items() (warning): fields and dict
        # part as they are
        return (_rebuild_dict_readable, (_fields(self), dict.copy(self)))

    def __getitem__(self, key: str) -> Any:
        return self._as_dict_warned()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._as_dict_warned()

    def get(self, key: str, default: Any = None) -> Any:
        return self._as_dict_warned().get(key, default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MergeResult):
            return _fields(self) == _fields(other)
        if isinstance(other, Mapping):
            return self._as_dict_warned() == dict(other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]  # equal to dicts, which are unhashable

    def __repr__(self) -> str:
        return repr(MergeResult(**_fields(self)))


def _fields(result: MergeResult) -> dict[str, Any]:
    """A result's MergeResult fields (not its dict part), by name."""
    return {f.name: getattr(result, f.name) for f in fields(MergeResult)}


def _rebuild_dict_readable(fields: dict[str, Any], items: dict[str, Any]) -> DictReadableResult:
    result = DictReadableResult(**fields)
    dict.clear(result)
    dict.update(result, items)
    return result

