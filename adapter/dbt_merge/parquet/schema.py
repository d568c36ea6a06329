"""The columns each file of a dataset holds: pure functions over `parquet_schema` rows.

Two jobs need each file's own top-level columns, identified exactly:

- pruning by statistics: a key's statistics are those of the *leaf column* (column_id in
  `parquet_metadata`) that is the top-level column of that name, never a nested field whose
  path prints the same (`path_in_schema` of field `y` of struct `x` is `x, y`, as is that of a
  top-level column named "x, y");
- schema evolution: files written at different times (or by other tools) may lack a later
  column, or hold a column in a narrower type. The dataset is read with one schema everywhere
  (DuckDB's union_by_name: a missing column is NULL); a column whose types in two files do not
  widen losslessly into one is refused, naming the files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FileColumn:
    """A top-level column of one file: its name, DuckDB type and, for a primitive column, the
    index of its leaf (`column_id` in parquet_metadata); None for a nested column."""

    name: str
    dtype: str
    leaf: int | None


def top_level_columns(
    rows: Iterable[tuple[str, str, str | None, int | None, str]],
) -> dict[str, list[FileColumn]]:
    """Each file's top-level columns, from parquet_schema rows (file_name, name, physical
    type, num_children, duckdb_type) in schema order."""
    by_file: dict[str, list[tuple]] = {}
    for row in rows:
        by_file.setdefault(row[0], []).append(row)
    result = {}
    for file, elements in by_file.items():
        columns: list[FileColumn] = []
        position = 1  # element 0 is the schema's root
        leaves = 0
        for _ in range(elements[0][3] or 0):
            _, name, physical, _, dtype = elements[position]
            if physical is not None:
                columns.append(FileColumn(name, dtype, leaves))
                leaves += 1
                position += 1
            else:
                position, leaves = _past_group(elements, position, leaves)
                columns.append(FileColumn(name, dtype, None))
        result[file] = columns
    return result


def _past_group(elements: Sequence[tuple], position: int, leaves: int) -> tuple[int, int]:
    """Past the group element at `position` and everything below it, counting its leaves:
    (the next element's position, the leaves counted so far)."""
    pending = 1
    while pending:
        _, _, physical, children, _ = elements[position]
        pending -= 1
        position += 1
        if physical is not None:
            leaves += 1
        else:
            pending += children or 0
    return position, leaves


def find(columns: Sequence[FileColumn], name: str) -> FileColumn | None | bool:
    """The column named `name` (exactly, or else ignoring case when only one matches); None
    when the file has none; False when several match ignoring case and none exactly."""
    for column in columns:
        if column.name == name:
            return column
    matches = [c for c in columns if c.name.lower() == name.lower()]
    if len(matches) > 1:
        return False
    return matches[0] if matches else None


_SIGNED = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT")
_UNSIGNED = ("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT")


def widens(stored: str, unified: str) -> bool:
    """Whether every value of type `stored` reads back exactly as `unified`."""
    a, b = stored.upper(), unified.upper()
    if a == b:
        return True
    if a in _SIGNED and b in _SIGNED:
        return _SIGNED.index(a) <= _SIGNED.index(b)
    if a in _UNSIGNED and b in _UNSIGNED:
        return _UNSIGNED.index(a) <= _UNSIGNED.index(b)
    if a in _UNSIGNED and b in _SIGNED:
        return _UNSIGNED.index(a) < _SIGNED.index(b)
    exact_in_double = ("TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT", "UINTEGER")
    if b == "DOUBLE" and (a == "FLOAT" or a in exact_in_double):
        return True
    return a == "DATE" and b in ("TIMESTAMP", "TIMESTAMP_NS")


def conflicts(
    files: dict[str, list[FileColumn]], unified: Sequence[tuple[str, str]]
) -> list[tuple[str, str, str, str]]:
    """(column, unified type, file, the file's type) for every file holding a column in a type
    that does not widen exactly into the type the dataset reads it as."""
    found = []
    for name, dtype in unified:
        for file, columns in files.items():
            column = find(columns, name)
            if column and not widens(column.dtype, dtype):
                found.append((name, dtype, file, column.dtype))
    return found
