"""Peak resident memory of a step, from Linux /proc: reset a process's high-water mark
(`/proc/PID/clear_refs` <- 5, Linux >= 4.0), run the step, read `VmHWM`. Exact, no sampling."""

from __future__ import annotations

import os
from pathlib import Path


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def reset_peak(pids: list[int]) -> None:
    for pid in pids:
        Path(f"/proc/{pid}/clear_refs").write_text("5")


def rss_mb(pid: int) -> float:
    return _status_kb(pid, "VmRSS") / 1024


def peak_mb(pid: int) -> float:
    return _status_kb(pid, "VmHWM") / 1024


def java_children(pid: int | None = None) -> list[int]:
    """Descendant processes of `pid` (default: this process) whose command is java."""
    pid = pid or os.getpid()
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        for child in frontier:
            try:
                if Path(f"/proc/{child}/comm").read_text().strip() == "java":
                    found.append(child)
            except OSError:
                pass
    return sorted(found)
