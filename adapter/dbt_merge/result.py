"""What a merge did, as every Python front end returns it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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
