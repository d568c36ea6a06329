"""Where a merge's files go and which directory it swaps: pure functions over relative paths.

A dataset is every `*.parquet` file under its root, the files a reader of
`root/**/*.parquet` sees. Paths here are relative to the root, with `/` separators; the
root itself is `""`.

A merge removes some files and adds new ones. It publishes all of that with one atomic
directory operation (see commit.py): it rebuilds the *smallest directory that holds every
change* (`swap_dir`), in a work folder, and swaps it with the live one. In a hive-partitioned
dataset whose changes fall in one partition, only that partition's directory is rebuilt.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from dbt_merge.parquet.errors import ParquetMergeError

_HIVE_PART = re.compile(r"^([^=/]+)=([^/]*)$")


def is_data_file(name: str) -> bool:
    return name.endswith(".parquet")


def parent(path: str) -> str:
    return posixpath.dirname(path)


def partition_columns(files: Iterable[str], root: str) -> list[str]:
    """The hive partition columns of a dataset, from its files' directories (`p=1/q=a/x.parquet`
    -> [p, q]); [] for a flat dataset. Mixed layouts are refused."""
    layouts: dict[tuple, str] = {}  # each layout, and its first file (sorted) for the message
    files = sorted(files)
    for path in files:
        dirs = [d for d in parent(path).split("/") if d]
        names = []
        for d in dirs:
            match = _HIVE_PART.match(d)
            names.append(match.group(1) if match else None)
        layouts.setdefault(tuple(names), path)
    if not layouts:
        return []
    if len(layouts) > 1 or any(name is None for name in next(iter(layouts))):
        # one file of each layout, named (red team helper-72: the layouts were printed as
        # "(root), None", in an order that changed from run to run)
        examples = ", ".join(sorted(layouts.values())[:5])
        # every plain folder, as its path up to it (`x/y/f` is `x`, `p=1/data/f` is
        # `p=1/data`): one run names all of them (red team helper-74: one per layout)
        plain = set()
        for path in files:
            parts = [d for d in parent(path).split("/") if d]
            for depth, d in enumerate(parts):
                if not _HIVE_PART.match(d):
                    plain.add("/".join(parts[: depth + 1]))
                    break
        plain = sorted(plain)
        raise ParquetMergeError(
            f"the Parquet files under {root} are not laid out as one dataset: their folders "
            f"are not the same hive partition columns (column=value) at every level (e.g. "
            f"{examples}). "
            + (
                f"A plain folder inside the dataset's folder ({'; '.join(plain[:5])}"
                f"{'; ...' if len(plain) > 5 else ''}) holding "
                "Parquet files is another dataset or a copy, which every reader of the folder "
                "reads with it: move it out of the dataset's folder, or merge into a folder "
                "holding one dataset."
                if plain
                else "Merge into a folder holding one dataset."
            )
        )
    return list(next(iter(layouts)))


def partition_values(path: str, columns: list[str]) -> tuple[str | None, ...]:
    """The values of a file's partition columns, from its folders (`p=a%2Fb/x.parquet` ->
    ('a/b',)): percent-decoded, `__HIVE_DEFAULT_PARTITION__` is NULL, as DuckDB reads them."""
    values = []
    for part in [d for d in parent(path).split("/") if d][: len(columns)]:
        raw = part.split("=", 1)[1]
        values.append(None if raw == "__HIVE_DEFAULT_PARTITION__" else unquote(raw))
    return tuple(values)


def common_dir(paths: Iterable[str]) -> str:
    """The deepest directory that holds every path (a file's directory counts, not the file)."""
    dirs = [parent(p).split("/") if parent(p) else [] for p in paths]
    if not dirs:
        return ""
    prefix = dirs[0]
    for d in dirs[1:]:
        n = 0
        while n < min(len(prefix), len(d)) and prefix[n] == d[n]:
            n += 1
        prefix = prefix[:n]
    return "/".join(prefix)


def under(path: str, directory: str) -> bool:
    return directory == "" or path == directory or path.startswith(directory + "/")


def relative_to(path: str, directory: str) -> str:
    return path if directory == "" else path[len(directory) + 1 :]


@dataclass(frozen=True)
class SwapPlan:
    """How one merge publishes its files.

    mode 'exchange': rebuild `directory` (which exists) in the work folder, without `removed`
        and with `added`, then swap the two in one atomic exchange.
    mode 'create': `directory` does not exist yet (a new partition, or a new dataset when
        it is ""): build it in the work folder and rename it into place.
    mode 'none': nothing changes.
    """

    mode: str
    directory: str
    removed: frozenset[str]
    added: tuple[str, ...]


def plan_swap(
    removed: Iterable[str], added: Iterable[str], exists: Callable[[str], bool]
) -> SwapPlan:
    """The swap publishing `removed` and `added` (relative file paths); `exists(dir)` says
    whether a directory exists under the live root ("" is the root)."""
    removed = frozenset(removed)
    added = tuple(added)
    if not removed and not added:
        return SwapPlan("none", "", removed, added)
    directory = common_dir([*removed, *added])
    if exists(directory):
        return SwapPlan("exchange", directory, removed, added)
    # Only added files live under a missing directory: create its shallowest missing ancestor.
    parts = directory.split("/") if directory else []
    for depth in range(len(parts) + 1):
        candidate = "/".join(parts[:depth])
        if not exists(candidate):
            return SwapPlan("create", candidate, removed, added)
    raise AssertionError("unreachable: some ancestor of a missing directory is missing")


def new_file_name(transaction: str, number: int) -> str:
    """The name of the `number`th file a merge writes. The transaction id makes it unique in
    the dataset, so a new file never replaces a live one."""
    return f"dbt_merge-{transaction}-{number:05d}.parquet"
