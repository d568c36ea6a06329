"""Where a dataset is: the folder a caller names, resolved once, and what the merge refuses there
before anything is written.

- `resolve`: the path as the file system resolves it (`~` is the home folder, as
  os.path.expanduser has it; symlinks and `..` resolved, os.path.realpath), refused when it is
  an object store, when readers could not glob it (a glob character, or a backslash, which
  DuckDB's glob reads as an escape: `read_parquet('a\\b/**/*.parquet')` finds no file), when it
  names a file, and when it is, is inside, or holds another table format's table.
- `table_format`: the Delta, Hudi or Iceberg table whose marker is in the folder, in one of its
  parents or below it. Its files are the table's, and merged as a plain folder of Parquet files
  they would leave the table's log naming files that are gone and missing the new ones.
- `same_or_nested`: two datasets that are one folder, or one inside the other (two `location`
  models so placed would merge into each other's rows).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from dbt_merge.parquet.errors import ParquetMergeError

GLOB_CHARACTERS = "*?[{"

#: A table format's marker folder, and the format's name.
MARKERS = (("_delta_log", "Delta"), (".hoodie", "Hudi"))


def glob_problem(path: str) -> str | None:
    """Why readers could not glob a dataset at `path` (`<path>/**/*.parquet`), or None."""
    glob = sorted({ch for ch in path if ch in GLOB_CHARACTERS})
    if glob:
        return (
            f"has a glob character ({' '.join(glob)}), which DuckDB would expand when reading "
            "the dataset (every later merge, every reader). Choose a path without * ? [ {."
        )
    if "\\" in path:
        return (
            "has a backslash, which DuckDB's glob reads as an escape: `<folder>/**/*.parquet` "
            "would find no file in it (every later merge, every reader, and whether the "
            "dataset exists). Choose a path without \\."
        )
    return None


def resolve(target_path: str | os.PathLike, fail: Callable[[str], None]) -> Path:
    """The dataset's folder, as the file system resolves it (see the module); `fail(message)`
    raises for a path the merge refuses."""
    raw = os.fspath(target_path)
    if "://" in raw:
        raise ParquetMergeError(
            "target_path must be a local folder: object stores (s3://, gs://, ...) have no "
            "atomic rename, so a merge there could leave rows missing or doubled if it stopped "
            "halfway (see docs/parquet-datasets.md, Guarantees). The dataset was not changed."
        )
    expanded = os.path.expanduser(raw)
    if expanded.startswith("~"):
        fail(
            f"the dataset's path {raw!r} starts with ~ but names no user this system knows, so "
            "it has no home folder to stand for. Write the folder's full path (or ~/... for "
            "your own home folder). The target was not changed."
        )
    if not expanded.strip():
        fail("target_path is empty: name the dataset's folder. The target was not changed.")
    root = Path(os.path.realpath(expanded))
    if root.parent == root:
        fail(
            f"target_path {raw!r} is the file system's root: a dataset is a folder of its own "
            "(every `*.parquet` below it is its rows). Name that folder. The target was not "
            "changed."
        )
    problem = glob_problem(str(root))
    if problem:
        # refused before anything is written: every read of the dataset globs its folder
        fail(f"the dataset's path {str(root)!r} {problem} The target was not changed.")
    if root.exists() and not root.is_dir():
        fail(
            f"target_path {str(root)!r} is a file, not a folder: a dataset is a folder of "
            "Parquet files (the first merge creates it). Name a folder. The target was not "
            "changed."
        )
    found = table_format(root)
    if found is not None:
        fmt, marker, where = found
        fail(
            f"the dataset's folder {str(root)!r} {where} a {fmt} table (its marker: "
            f"{str(marker)!r}): merged as a plain folder of Parquet files, the table's files "
            f"would be rewritten and replaced behind its log, which would then name files "
            f"that are gone and miss the new ones. Merge into the table through {fmt}'s own "
            "writer (on Spark, the `merge` materialization into the table), or name a folder "
            "that is no table's. The target was not changed."
        )
    return root


def table_format(root: Path) -> tuple[str, Path, str] | None:
    """(format, marker, 'is' / 'is inside' / 'holds') for a Delta, Hudi or Iceberg table whose
    marker is in `root`, in one of its parents or in a folder below it; None otherwise."""
    for index, folder in enumerate([root, *root.parents]):
        found = _marker(folder)
        if found is not None:
            return (*found, "is" if index == 0 else "is inside")
    if root.is_dir():
        for dirpath, dirnames, _ in os.walk(root):
            for name in dirnames:
                found = _marker(Path(dirpath) / name)
                if found is not None:
                    return (*found, "holds")
    return None


def _marker(folder: Path) -> tuple[str, Path] | None:
    """The table format whose marker `folder` holds: Delta's `_delta_log`, Hudi's `.hoodie`,
    Iceberg's `metadata` folder of `*.metadata.json` files (or `version-hint.text`)."""
    for name, fmt in MARKERS:
        if (folder / name).is_dir():
            return fmt, folder / name
    metadata = folder / "metadata"
    if metadata.is_dir() and (
        (metadata / "version-hint.text").is_file() or any(metadata.glob("*.metadata.json"))
    ):
        return "Iceberg", metadata
    return None


def same_or_nested(root: Path, others: Iterable[tuple[str, str]]) -> tuple[str, Path, str] | None:
    """The first of `others` ((name, location), each resolved as `resolve` does) that is `root`,
    holds it or lies inside it: (name, its folder, 'is' / 'holds' / 'is inside'); None."""
    for name, location in others:
        other = Path(os.path.realpath(os.path.expanduser(os.fspath(location))))
        if other == root:
            return name, other, "is"
        if other in root.parents:
            return name, other, "holds"
        if root in other.parents:
            return name, other, "is inside"
    return None
