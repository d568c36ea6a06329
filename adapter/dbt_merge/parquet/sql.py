"""SQL text of the Parquet merge (DuckDB dialect): pure functions, no connection.

The merge's *semantics* are the shared flow's (macros/flow/run_merge.sql): which rows match,
their actions and the counts come from its changes. This module writes the SQL that is
particular to files, for the writer (writer.py): reading a set of Parquet files, pruning them by
their statistics, the matched source rows of the files to rewrite, and the one query whose
result replaces each rewritten file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# the DuckDB door's: a column as the macros expect one (.name, .dtype, .data_type, .quoted),
# and the identifier quote (the parquet modules' q.quote)
from dbt_merge.duckdb.connection import Column, ascii_lower, ascii_lower_sql, quote  # noqa: F401

SRC = "DBT_INTERNAL_SOURCE"
DST = "DBT_INTERNAL_DEST"

# Key types whose Parquet min/max statistics DuckDB reads back exactly (stats_min_value cast
# to the column's type); files are pruned by these only. Floating point keys are never
# pruned (NaN is not ordered in the statistics).
PRUNABLE_TYPES = (
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "VARCHAR",
    "DATE",
    "TIMESTAMP",
)

COMPRESSIONS = ("uncompressed", "snappy", "gzip", "zstd", "lz4", "lz4_raw", "brotli")


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def fresh_name(base: str, taken: Sequence[str]) -> str:
    """`base`, or `base_2`, ...: a name equal (ignoring case) to none of `taken`."""
    lowered = {t.lower() for t in taken}
    name, n = base, 1
    while name.lower() in lowered:
        n += 1
        name = f"{base}_{n}"
    return name


def is_prunable(dtype: str) -> bool:
    t = dtype.upper()
    return t in PRUNABLE_TYPES or t.startswith("DECIMAL(")


def hive_type(dtype: str) -> str:
    """The type a partition column's folder values are read as: the column's, except that a
    column with no type (DuckDB's "NULL": every value null) reads them as VARCHAR, as readers do
    without hive_types."""
    return "VARCHAR" if dtype.strip('"').upper() == "NULL" else dtype


@dataclass(frozen=True)
class Hive:
    """A hive-partitioned dataset: its partition columns with their types (in folder order),
    and each file's values (absolute path -> decoded values, None for NULL). The values come
    from the folders below the dataset's root (layout.partition_values), never from DuckDB's
    hive parsing, which would also take a `k=v` folder *above* the root for a column."""

    types: dict[str, str]
    values: dict[str, tuple]


def read_files(
    paths: Sequence[str],
    hive: Hive | None,
    filename_column: str | None = None,
    columns: Sequence[Column] | None = None,
) -> str:
    """A relation (for FROM) over exactly these files, union_by_name (files may differ in
    columns), with the partition columns of a hive dataset last, and optionally each row's
    file path as `filename_column`. With `columns` (the whole dataset's schema), the relation
    has exactly those columns and types whichever files are read: a column these files lack
    is NULL, a narrower type is widened (schema evolution)."""
    relation = _read_files(paths, hive, filename_column)
    if columns is None:
        return relation
    typed = ", ".join(f"cast(null as {c.dtype}) as {quote(c.name)}" for c in columns)
    return (
        f"((select {typed} limit 0) union all by name (select * from {relation} as dbt_merge_read))"
    )


def _read_files(paths: Sequence[str], hive: Hive | None, filename_column: str | None) -> str:
    files = ", ".join(literal(p) for p in paths)
    if hive is None:
        if not filename_column:
            return f"read_parquet([{files}], union_by_name = true, hive_partitioning = false)"
        fc = quote(filename_column)
        return (
            f"(select * replace ({fc} collate c as {fc}) from read_parquet([{files}],"
            f" union_by_name = true, hive_partitioning = false,"
            f" filename = {literal(filename_column)}))"
        )
    path, joined = "dbt_merge_file_path", "dbt_merge_partition_path"
    names = list(hive.types)
    rows = []
    for p in paths:
        values = [literal(p)]
        for name, value in zip(names, hive.values[p], strict=True):
            text = "null" if value is None else literal(value)
            values.append(f"cast({text} as {hive.types[name]})")
        rows.append(f"({', '.join(values)})")
    # every file column but a partition column a file may also hold (the folder wins, as in
    # DuckDB's hive reading), then the partition columns from the folders. The same column as
    # DuckDB names columns: equal but for the case of A-Z. A file's column equal to a partition
    # column only as lower() folds beyond A-Z (the Kelvin sign K, U+212A, and `k`) is another
    # column to DuckDB: kept, and refused by the flow as a pair of names the merge takes for one
    # (red team helper-77: lower() hid it, and a rewrite of its file dropped its values)
    hidden = [ascii_lower(n) for n in names] + [joined] + ([] if filename_column else [path])
    hidden_list = ", ".join(literal(h) for h in hidden)
    partition_list = ", ".join(f"dbt_merge_partitions.{quote(n)}" for n in names)
    query = (
        f"select columns(lambda c: {ascii_lower_sql('c')} not in ({hidden_list})), {partition_list}"
        f" from read_parquet([{files}], union_by_name = true, hive_partitioning = false,"
        f" filename = {literal(path)}) as dbt_merge_files"
        f" join (values {', '.join(rows)})"
        f" as dbt_merge_partitions({', '.join(quote(c) for c in [joined, *names])})"
        f" on (dbt_merge_files.{quote(path)} collate c) = dbt_merge_partitions.{quote(joined)}"
    )
    if filename_column:
        fc = quote(filename_column)
        query = (
            f"select * replace ({fc} collate c as {fc}) from"
            f" (select * rename ({quote(path)} as {fc}) from ({query}))"
        )
    return f"({query})"


def read_dataset(root: str, hive_types: dict[str, str] | None, columns: Sequence[str]) -> str:
    """What a reader of the dataset runs: every `*.parquet` under root, with DuckDB's hive
    parsing when partitioned, as exactly the dataset's columns (a `k=v` folder above the root
    would otherwise show as one more column)."""
    pattern = literal(root.rstrip("/") + "/**/*.parquet")
    options = "union_by_name = true, hive_partitioning = " + ("true" if hive_types else "false")
    if hive_types:
        types = ", ".join(f"{literal(c)}: {literal(t)}" for c, t in hive_types.items())
        options += ", hive_types = {" + types + "}"
    listed = ", ".join(quote(c) for c in columns)
    return f"(select {listed} from read_parquet({pattern}, {options}))"






def row_group_ranges_sql(
    metadata: str, range_keys: Sequence[Column], file_column: str, lo: list[str], hi: list[str]
) -> str:
    """One row per (file, row group): the min and max of each range key, typed, NULL when the
    file has no usable statistics for it. `metadata` is parquet_metadata(...) rows with one
    more column, dbt_merge_key: the index of the range key whose leaf column the row is
    (key_leaves_sql), never found by its printed path (see schema.py)."""
    columns = [f"file_name as {quote(file_column)}"]
    for index, (key, lo_name, hi_name) in enumerate(zip(range_keys, lo, hi, strict=True)):
        is_key = f"dbt_merge_key = {index}"
        columns.append(
            f"max(case when {is_key} then try_cast(stats_min_value as {key.dtype}) end)"
            f" as {quote(lo_name)}"
        )
        columns.append(
            f"max(case when {is_key} then try_cast(stats_max_value as {key.dtype}) end)"
            f" as {quote(hi_name)}"
        )
    return f"select {', '.join(columns)} from {metadata} group by file_name, row_group_id"


def metadata_rows(file_list: str) -> str:
    """parquet_metadata of the files (a relation for FROM), their names compared byte for byte
    whatever the connection's default_collation: under 'nocase', `part.parquet` and
    `Part.parquet` were one file to every join, group and distinct on the name (red team
    helper-92: an update lost, a key inserted twice). Every file name column the writer reads
    is binary for the same reason (read_files' filename column)."""
    return (
        "(select * replace (file_name collate c as file_name)"
        f" from parquet_metadata({file_list}))"
    )


def key_leaves_sql(file_list: str, leaves: Sequence[tuple[str, int, int]]) -> str:
    """parquet_metadata rows of the range keys' leaf columns only, each with dbt_merge_key:
    `leaves` is (file, column_id, range key index) per file and key."""
    rows = ", ".join(f"({literal(f)}, {int(c)}, {int(k)})" for f, c, k in leaves)
    return (
        f"(select dbt_merge_md.*, dbt_merge_leaves.dbt_merge_key"
        f" from {metadata_rows(file_list)} as dbt_merge_md"
        f" join (values {rows}) as dbt_merge_leaves(dbt_merge_file, dbt_merge_column,"
        f" dbt_merge_key) on dbt_merge_md.file_name = dbt_merge_leaves.dbt_merge_file"
        f" and dbt_merge_md.column_id = dbt_merge_leaves.dbt_merge_column)"
    )


def candidate_files_sql(
    ranges: str,
    source: str,
    file_column: str,
    range_keys: Sequence[str],
    lo: list[str],
    hi: list[str],
    partition_keys: Sequence[str],
    compared=None,
) -> str:
    """The files that may hold a key of `source`: a row group whose range of every range key
    holds the source key (and whose partition values equal it). Row groups without
    statistics for the first range key are joined on the rest only. `ranges` holds the
    columns of row_group_ranges_sql plus one column per partition key, named as the key.
    `compared(column, expr)`: the value as the merge compares it (the macros' compared_value:
    byte order, as the statistics are, whatever collation the connection has)."""
    c = compared or (lambda column, expr: expr)
    r, s = "dbt_merge_ranges", SRC
    equal = [f"{c(p, f'{r}.{quote(p)}')} = {c(p, f'{s}.{quote(p)}')}" for p in partition_keys]
    residual = []
    for k, lo_, hi_ in zip(range_keys[1:], lo[1:], hi[1:], strict=True):
        key, low, high = c(k, f"{s}.{quote(k)}"), f"{r}.{quote(lo_)}", f"{r}.{quote(hi_)}"
        residual.append(
            f"({low} is null or {key} >= {c(k, low)}) and ({high} is null or {key} <= {c(k, high)})"
        )
    f = f"{r}.{quote(file_column)}"
    if not range_keys:
        on = " and ".join(equal) or "true"
        return f"select distinct {f} from {ranges} as {r} join {source} as {s} on {on}"
    k0, lo0, hi0 = quote(range_keys[0]), quote(lo[0]), quote(hi[0])
    key0 = c(range_keys[0], f"{s}.{k0}")
    bounded = [
        f"{key0} >= {c(range_keys[0], f'{r}.{lo0}')}",
        f"{key0} <= {c(range_keys[0], f'{r}.{hi0}')}",
        *equal,
        *residual,
    ]
    unbounded = [*equal, *residual] or ["true"]
    return (
        f"select distinct {f} from {ranges} as {r} join {source} as {s}"
        f" on {' and '.join(bounded)}"
        f" where {r}.{lo0} is not null and {r}.{hi0} is not null"
        f" union "
        f"select distinct {f} from {ranges} as {r} join {source} as {s}"
        f" on {' and '.join(unbounded)}"
        f" where {r}.{lo0} is null or {r}.{hi0} is null"
    )


#: The actions of a matched (source row, dataset row) pair (classify_changes_sql's): updated,
#: unchanged, held back by merge_update_condition, deleted by delete_condition, already
#: soft-deleted; and, as SQL lists, the actions that change a dataset row (its file is
#: rewritten).
MATCHED = "UNHCK"
REWRITES = "('U', 'D', 'C')"


def empty_relation(columns: Sequence[Column], filename_column: str) -> str:
    """A relation with `columns` (and the file column) and no row: the files read when none
    may hold a source key."""
    typed = [f"cast(null as {c.dtype}) as {quote(c.name)}" for c in columns]
    typed.append(f"cast(null as varchar) as {quote(filename_column)}")
    return f"(select {', '.join(typed)} limit 0)"




def matched_source_sql(
    matched: str,
    source: str,
    file_column: str,
    action_column: str,
    matched_key_match: str,
    every_file: bool = False,
) -> str:
    """The source rows matched in the files to rewrite (those holding a changed row, or
    every_file), with the file and the action: what the rewrite of each file joins (aliased
    dbt_merge_matched in the key match)."""
    m = "dbt_merge_matched"
    f, a = quote(file_column), quote(action_column)
    listed = ", ".join(literal(x) for x in MATCHED)
    files = ""
    if not every_file:
        files = f" and {m}.{f} in (select {f} from {matched} where {a} in {REWRITES})"
    return (
        f"select {m}.{f}, {m}.{a}, {SRC}.* from {matched} as {m}"
        f" join {source} as {SRC} on {matched_key_match}"
        f" where {m}.{a} in ({listed}){files}"
    )


@dataclass(frozen=True)
class Images:
    """How a rewritten row is formed from the dataset row (DST, read with `read_columns`) and
    its matched source row (SRC, from matched_source_sql; NULL when none matched), into
    `target_columns` (the dataset's columns after a planned schema change; `dest_values`: a
    dataset row's value of an added or retyped column)."""

    target_columns: Sequence[Column]
    source_names: dict[str, str]  # target column (lower case) -> source column
    update_columns: Sequence[str]
    keys: Sequence[str]
    partitions: Sequence[str]
    action_column: str
    deletes: bool
    read_columns: Sequence[Column] = ()
    dest_values: dict[str, str] = field(default_factory=dict)
    considered: str = "true"  # the dataset rows the merge considers (on DST)
    live: str | None = None  # with soft deletes: DST is not soft-deleted
    soft_delete: str | None = None  # the soft-delete column (target name)
    soft_delete_timestamp: str | None = None
    now: str | None = None  # the merge's time (SQL), one for every file it rewrites
    compared: Any = None  # (column, SQL) -> SQL: the macros' compared_value (byte for byte)

    def _dest(self, col: Column) -> str:
        return self.dest_values.get(col.name.lower(), f"{DST}.{quote(col.name)}")

    def deleted(self) -> str:
        """True for a dataset row the merge deletes (or soft-deletes): delete_condition's
        ('C') and, when the strategy deletes, a considered (live) row no source row matched."""
        a = f"{SRC}.{quote(self.action_column)}"
        parts = [f"{a} = 'C'"]
        if self.deletes:
            missing = f"{a} is null and {self.considered}"
            parts.append(f"({missing} and {self.live})" if self.live else f"({missing})")
        return f"coalesce({' or '.join(parts)}, false)"

    def value(self, col: Column) -> str:
        lower = col.name.lower()
        dest = self._dest(col)
        if lower in {c.lower() for c in self.update_columns}:
            src = quote(self.source_names[lower])
            updated = f"{SRC}.{quote(self.action_column)} = 'U'"
            value = f"case when {updated} then {SRC}.{src} else {dest} end"
        else:
            value = dest
        if self.soft_delete and lower == self.soft_delete.lower():
            return f"case when {self.deleted()} then true else {value} end"
        if self.soft_delete_timestamp and lower == self.soft_delete_timestamp.lower():
            # as the column's type: a DATE or VARCHAR column's rewritten files keep their type
            # (before: the TIMESTAMP of the CASE, a dataset of mixed types; red team helper-46)
            now = self.now or "cast(current_timestamp as timestamp)"
            return f"case when {self.deleted()} then cast({now} as {col.dtype}) else {value} end"
        return value

    def moved(self) -> str | None:
        """True for an updated row whose partition values change (it moves to another folder)."""
        update_lower = {c.lower() for c in self.update_columns}
        c = self.compared or (lambda column, expr: expr)
        parts = [
            f"{c(p, f'{SRC}.{quote(self.source_names[p.lower()])}')}"
            f" is distinct from {c(p, f'{DST}.{quote(p)}')}"
            for p in self.partitions
            if p.lower() in update_lower
        ]
        moves = []
        if parts:
            # coalesce: a row no source row matched has a NULL action, and is not moved
            moves.append(
                f"coalesce({SRC}.{quote(self.action_column)} = 'U' and ({' or '.join(parts)}),"
                " false)"
            )
        partition_lower = {p.lower() for p in self.partitions}
        soft = [c for c in (self.soft_delete, self.soft_delete_timestamp) if c]
        if any(c.lower() in partition_lower for c in soft):
            # a soft delete sets a partition column: the (live) row moves to another folder
            moves.append(self.deleted())
        return f"({' or '.join(moves)})" if moves else None

    def kept(self) -> str:
        """The rows of a rewritten file that stay in it: all but the deleted rows (unless
        deletes are soft) and the rows moving to another partition."""
        conditions = []
        if not self.soft_delete:
            conditions.append(f"not {self.deleted()}")
        moved = self.moved()
        if moved:
            conditions.append(f"not {moved}")
        return " and ".join(conditions) or "true"


def rewrite_file_sql(
    file: str,
    images: Images,
    matched_source: str,
    hive: Hive | None,
    file_column: str,
    key_match: str,
) -> str:
    """The new content of one rewritten file: its rows with the updates applied, sorted by the
    key; partition columns are left out (they are the file's folder). Only a row the merge
    considers is joined with its source row: a row of the same key outside the incremental
    predicates, in the same file, stays as it is."""
    partition_lower = {p.lower() for p in images.partitions}
    values = [
        f"{images.value(c)} as {quote(c.name)}"
        for c in images.target_columns
        if c.name.lower() not in partition_lower
    ]
    order = ", ".join(f"{DST}.{quote(k)}" for k in images.keys)
    return (
        f"select {', '.join(values)} from"
        f" {read_files([file], hive, columns=images.read_columns or images.target_columns)}"
        f" as {DST}"
        f" left join (select * from {matched_source} where {quote(file_column)} = {literal(file)})"
        f" as {SRC} on {key_match} and {images.considered} where {images.kept()} order by {order}"
    )


def new_rows_sql(
    images: Images,
    source: str,
    matched: str | None,
    matched_key_match: str,
    inserts: bool,
    affected: str | None,
    matched_source: str | None,
    key_match: str,
    source_filter: str | None = None,
) -> str | None:
    """The rows for new files: the source rows whose key the dataset lacks (when the strategy
    inserts; those `source_filter` keeps: delete_condition false) and the updated rows that
    move to another partition. None if there can be none."""
    parts = []
    if inserts:
        values = []
        for col in images.target_columns:
            src_col = images.source_names.get(col.name.lower())
            value = f"{SRC}.{quote(src_col)}" if src_col else f"cast(null as {col.dtype})"
            values.append(f"{value} as {quote(col.name)}")
        conditions = [source_filter] if source_filter else []
        if matched is not None:
            listed = ", ".join(literal(x) for x in MATCHED)
            conditions.append(
                f"not exists (select 1 from {matched} as dbt_merge_matched"
                f" where dbt_merge_matched.{quote(images.action_column)} in ({listed})"
                f" and {matched_key_match})"
            )
        where = f" where {' and '.join(conditions)}" if conditions else ""
        parts.append(f"select {', '.join(values)} from {source} as {SRC}{where}")
    moved = images.moved()
    if moved and affected is not None and matched_source is not None:
        values = [f"{images.value(c)} as {quote(c.name)}" for c in images.target_columns]
        parts.append(
            f"select {', '.join(values)} from {affected} as {DST}"
            f" left join {matched_source} as {SRC} on {key_match} and {images.considered}"
            f" where {moved}"
        )
    return " union all ".join(parts) if parts else None


def copy_sql(
    query: str,
    destination: str,
    sort_keys: Sequence[str],
    compression: str,
    row_group_size: int,
    partition_columns: Sequence[str],
    chunk_column: str | None,
    rows_per_file: int,
    file_pattern: str,
) -> str:
    """COPY `query` to Parquet, sorted by the key. Without partition columns and chunking,
    `destination` is one file. Otherwise it is a folder: hive folders per partition value and,
    with chunk_column, one folder per `rows_per_file` rows of each partition, in key order
    (the caller moves those files up and renames them)."""
    order = ", ".join(quote(k) for k in sort_keys)
    options = [
        "format parquet",
        f"compression {compression}",
        f"row_group_size {int(row_group_size)}",
    ]
    by = [quote(p) for p in partition_columns]
    if chunk_column:
        window = f"partition by {', '.join(by)} " if by else ""
        numbered = (
            f"select *, (row_number() over ({window}order by {order}) - 1)"
            f" // {int(rows_per_file)} as {quote(chunk_column)} from ({query}) as dbt_merge_rows"
        )
        query = numbered
        by.append(quote(chunk_column))
    else:
        query = f"select * from ({query}) as dbt_merge_rows order by {order}"
    if by:
        options += [f"partition_by ({', '.join(by)})", f"filename_pattern {literal(file_pattern)}"]
    return f"copy ({query}) to {literal(destination)} ({', '.join(options)})"


def copy_file_sql(query: str, destination: str, compression: str, row_group_size: int) -> str:
    return (
        f"copy ({query}) to {literal(destination)}"
        f" (format parquet, compression {compression}, row_group_size {int(row_group_size)})"
    )
