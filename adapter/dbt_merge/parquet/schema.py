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
from typing import NamedTuple


@dataclass(frozen=True)
class FileColumn:
    """A top-level column of one file: its name, DuckDB type and, for a primitive column, the
    index of its leaf (`column_id` in parquet_metadata); None for a nested column."""

    name: str
    dtype: str
    leaf: int | None


class Element(NamedTuple):
    """One row of DuckDB's parquet_schema(): a schema element of one file (the root, a
    column, or a field inside one). A query selects ELEMENT_COLUMNS for it."""

    file_name: str
    name: str
    type: str | None  # the physical type; None for a group (the root, a STRUCT, LIST, MAP)
    num_children: int | None
    duckdb_type: str | None
    converted_type: str | None = None
    logical_type: str | None = None
    precision: int | None = None
    scale: int | None = None


ELEMENT_COLUMNS = ", ".join(Element._fields)


def top_level_columns(rows: Iterable[Sequence]) -> dict[str, list[FileColumn]]:
    """Each file's top-level columns, from parquet_schema rows (Element's fields, the first
    five at least) in schema order."""
    return {file: [column for column, _ in spans] for file, spans in _spans(rows).items()}


def wide_decimals(rows: Iterable[Sequence]) -> list[tuple[str, str, Element, bool]]:
    """(file, top-level column, element, whether the element is a field inside the column) for
    each element (the column itself or a field inside it) that a file stores as a DECIMAL of
    more than 38 digits, from parquet_schema rows (Element's fields): DuckDB reads such a
    decimal as DOUBLE, rounded."""
    found = []
    for file, spans in _spans(rows).items():
        for column, elements in spans:
            for element in elements:
                decimal = element.converted_type == "DECIMAL" or str(
                    element.logical_type or "").startswith("Decimal")
                if decimal and (element.precision or 0) > 38:
                    found.append((file, column.name, element, element is not elements[0]))
    return found


def int96_columns(rows: Iterable[Sequence]) -> dict[str, list[str]]:
    """Each file's top-level columns that hold INT96 timestamps (the column itself or a field
    inside it), from parquet_schema rows (Element's fields)."""
    found: dict[str, list[str]] = {}
    for file, spans in _spans(rows).items():
        for column, elements in spans:
            if any(element.type == "INT96" for element in elements):
                found.setdefault(file, []).append(column.name)
    return found


def _spans(rows: Iterable[Sequence]) -> dict[str, list[tuple[FileColumn, list[Element]]]]:
    """Each file's top-level columns, each with the schema elements it spans (itself and every
    field below it), from parquet_schema rows in schema order."""
    by_file: dict[str, list[Element]] = {}
    for row in rows:
        by_file.setdefault(row[0], []).append(Element(*row))
    result = {}
    for file, elements in by_file.items():
        spans: list[tuple[FileColumn, list[Element]]] = []
        position = 1  # element 0 is the schema's root
        leaves = 0
        for _ in range(elements[0].num_children or 0):
            start, element = position, elements[position]
            if element.type is not None:
                column = FileColumn(element.name, element.duckdb_type, leaves)
                leaves += 1
                position += 1
            else:
                position, leaves = _past_group(elements, position, leaves)
                column = FileColumn(element.name, element.duckdb_type, None)
            spans.append((column, elements[start:position]))
        result[file] = spans
    return result


def _past_group(elements: Sequence[Element], position: int, leaves: int) -> tuple[int, int]:
    """Past the group element at `position` and everything below it, counting its leaves:
    (the next element's position, the leaves counted so far)."""
    pending = 1
    while pending:
        element = elements[position]
        pending -= 1
        position += 1
        if element.type is not None:
            leaves += 1
        else:
            pending += element.num_children or 0
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
