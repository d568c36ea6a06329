"""The bad-input catalogue: every input we know to be wrong, the error it must raise, the fix.

The README's error table is this list (test_bad_inputs checks the two agree). Each entry is
merged into an existing target; the run must fail with `message` in the error text and leave
the target exactly as it was.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

T0 = dt.datetime(2024, 1, 1)
T1 = dt.datetime(2024, 2, 1)

TARGET_COLS = [("id", "int"), ("name", "str"), ("amount", "float"), ("updated_at", "ts")]
TARGET_ROWS = [
    {"id": 1, "name": "a", "amount": 1.0, "updated_at": T0},
    {"id": 2, "name": "b", "amount": 2.0, "updated_at": T0},
]
SOURCE_ROWS = [
    {"id": 2, "name": "b2", "amount": 2.5, "updated_at": T1},
    {"id": 3, "name": "c", "amount": 3.0, "updated_at": T1},
]


@dataclass
class Bad:
    id: str
    input: str  # what is wrong, as the docs table says it
    config: dict
    message: str | dict[str, str]  # error excerpt, or per engine
    fix: str
    source_cols: list = field(default_factory=lambda: list(TARGET_COLS))
    source_rows: list = field(default_factory=lambda: [dict(r) for r in SOURCE_ROWS])
    target_cols: list = field(default_factory=lambda: list(TARGET_COLS))
    engines: tuple[str, ...] = ("duckdb", "spark")
    ours: bool = True  # the package raises it (message starts with "dbt_merge: model '...':")

    def excerpt(self, engine: str) -> str:
        return self.message if isinstance(self.message, str) else self.message[engine]


def _with(rows: list[dict], **changes) -> list[dict]:
    return [{**r, **changes} for r in rows]


DUP = [dict(SOURCE_ROWS[0]), {**SOURCE_ROWS[0], "name": "other"}]

CATALOGUE: list[Bad] = [
    Bad(
        "unknown_strategy",
        "`strategy` not one of the five",
        {"strategy": "upsrt", "unique_key": "id"},
        "strategy 'upsrt' is not one of: upsert, insert, update, full_merge, deduplicate",
        "Set `strategy` to upsert, insert, update, full_merge or deduplicate.",
    ),
    Bad(
        "missing_unique_key",
        "`unique_key` not set",
        {"strategy": "upsert"},
        "unique_key is missing or empty",
        "Set `unique_key='id'` or a list of columns.",
    ),
    Bad(
        "empty_unique_key_list",
        "`unique_key=[]`",
        {"unique_key": []},
        "unique_key is missing or empty",
        "List at least one key column.",
    ),
    Bad(
        "blank_unique_key",
        "`unique_key=' '` (blank string)",
        {"unique_key": " "},
        "unique_key is missing or empty",
        "Name a key column.",
    ),
    Bad(
        "unique_key_twice",
        "`unique_key` names a column twice (`['id', 'ID']`)",
        {"unique_key": ["id", "ID"]},
        "names a column twice",
        "List each key column once.",
    ),
    Bad(
        "key_not_in_select",
        "a `unique_key` column is not in the model's SELECT",
        {"unique_key": "customer_id"},
        "unique_key column 'customer_id' is not in the model's SELECT (columns: id, name, amount",
        "Add the column to the SELECT or fix `unique_key`.",
    ),
    Bad(
        "key_injection",
        "`unique_key` holding SQL (`id) or (1=1`)",
        {"unique_key": "id) or (1=1"},
        "unique_key column 'id) or (1=1' is not in the model's SELECT",
        "`unique_key` takes column names only; they are quoted, never pasted as SQL.",
    ),
    Bad(
        "key_not_in_target",
        "a `unique_key` column is in the SELECT but not in the existing table",
        {"unique_key": ["id", "region"]},
        "unique_key column 'region' is not in the target table",
        "Run with `--full-refresh` to rebuild the table with the new key.",
        source_cols=[*TARGET_COLS, ("region", "str")],
        source_rows=_with(SOURCE_ROWS, region="eu"),
    ),
    Bad(
        "null_key",
        "a key column is NULL in some source rows",
        {"unique_key": "id"},
        "unique_key column 'id' is NULL in 1 row(s) of the model's SELECT",
        "Filter those rows out or `coalesce` the key in the SELECT.",
        source_rows=[SOURCE_ROWS[0], {**SOURCE_ROWS[1], "id": None}],
    ),
    Bad(
        "duplicate_keys",
        "a key occurs more than once in the SELECT (upsert, insert, update, full_merge)",
        {"strategy": "full_merge", "unique_key": "id"},
        "1 unique_key value(s) occur more than once in the model's SELECT, e.g. (id) = (2)",
        "Make the key unique, fix `unique_key`, or use `strategy='deduplicate'`.",
        source_rows=DUP,
    ),
    Bad(
        "duplicate_composite_key",
        "a composite key occurs more than once in the SELECT",
        {"strategy": "upsert", "unique_key": ["id", "name"]},
        "1 unique_key value(s) occur more than once in the model's SELECT,"
        " e.g. (id, name) = (2, b2)",
        "Make the key unique, fix `unique_key`, or use `strategy='deduplicate'`.",
        # (2, b2) twice with different amounts; (2, x) shares only the id, which is no repeat
        source_rows=[*DUP[:1], {**SOURCE_ROWS[0], "amount": 9.0}, {**SOURCE_ROWS[0], "name": "x"}],
    ),
    Bad(
        "exact_duplicate_rows",
        "identical rows share a key (upsert, insert, update, full_merge)",
        {"strategy": "upsert", "unique_key": "id"},
        "occur more than once in the model's SELECT",
        "`select distinct`, or use `strategy='deduplicate'` (identical rows collapse).",
        source_rows=[SOURCE_ROWS[0], dict(SOURCE_ROWS[0])],
    ),
    Bad(
        "dedup_rows_differ",
        "deduplicate without `dedup_order_by`, and rows of one key differ",
        {"strategy": "deduplicate", "unique_key": "id"},
        "1 key(s) have rows that differ and no dedup_order_by is set, e.g. (id) = (2)",
        "Set `dedup_order_by` (e.g. `'updated_at desc'`) to choose the row to keep.",
        source_rows=DUP,
    ),
    Bad(
        "dedup_tie",
        "deduplicate: different rows of one key tie on `dedup_order_by`",
        {"strategy": "deduplicate", "unique_key": "id", "dedup_order_by": "updated_at desc"},
        "1 key(s) have different rows that tie on dedup_order_by (updated_at desc)",
        "Add a tie-breaking column to `dedup_order_by`.",
        source_rows=DUP,
    ),
    Bad(
        "dedup_order_by_null_tie",
        "deduplicate: the first rows of a key are all NULL in `dedup_order_by` (NULLs tie)",
        {"strategy": "deduplicate", "unique_key": "id", "dedup_order_by": "updated_at"},
        "tie on dedup_order_by (updated_at)",
        "Coalesce the ordering column or add a tie-breaker.",
        source_rows=_with(DUP, updated_at=None),
    ),
    Bad(
        "dedup_order_by_missing",
        "`dedup_order_by` names a column the SELECT does not have",
        {"strategy": "deduplicate", "unique_key": "id", "dedup_order_by": "loaded_at desc"},
        "dedup_order_by 'loaded_at desc' does not name a column of the model's SELECT",
        "Write it as `'column'`, `'column asc'` or `'column desc'`.",
    ),
    Bad(
        "dedup_order_by_injection",
        "`dedup_order_by` holding SQL (`updated_at desc; drop table x`)",
        {
            "strategy": "deduplicate",
            "unique_key": "id",
            "dedup_order_by": "updated_at desc; drop table x",
        },
        "dedup_order_by 'updated_at desc; drop table x' does not name a column",
        "`dedup_order_by` takes column names with an optional asc/desc only.",
    ),
    Bad(
        "dedup_order_by_key",
        "`dedup_order_by` names a key column",
        {"strategy": "deduplicate", "unique_key": "id", "dedup_order_by": "ID desc"},
        "dedup_order_by column 'id' is part of unique_key",
        "Order by a non-key column such as a timestamp.",
    ),
    Bad(
        "dedup_order_by_wrong_strategy",
        "`dedup_order_by` with a strategy other than deduplicate",
        {"strategy": "upsert", "unique_key": "id", "dedup_order_by": "updated_at"},
        "dedup_order_by is set but strategy is 'upsert'",
        "Remove `dedup_order_by` or set `strategy='deduplicate'`.",
    ),
    Bad(
        "update_and_exclude",
        "both `merge_update_columns` and `merge_exclude_columns`",
        {"unique_key": "id", "merge_update_columns": ["name"], "merge_exclude_columns": ["amount"]},
        "merge_update_columns and merge_exclude_columns are both set",
        "Set only one of them.",
    ),
    Bad(
        "update_columns_unknown",
        "`merge_update_columns` names a column that does not exist",
        {"unique_key": "id", "merge_update_columns": ["nme"]},
        "merge_update_columns names column 'nme', which is not a non-key column",
        "Fix `merge_update_columns`.",
    ),
    Bad(
        "update_columns_key",
        "`merge_update_columns` names a key column",
        {"unique_key": "id", "merge_update_columns": ["id"]},
        "merge_update_columns names column 'id', which is not a non-key column",
        "Keys are never updated; remove the key from the list.",
    ),
    Bad(
        "exclude_columns_unknown",
        "`merge_exclude_columns` names a column that does not exist",
        {"unique_key": "id", "merge_exclude_columns": ["nme"]},
        "merge_exclude_columns names column 'nme'",
        "Fix `merge_exclude_columns`.",
    ),
    Bad(
        "on_schema_change_unknown",
        "`on_schema_change` not one of ignore, fail, append_new_columns, sync_all_columns",
        {"unique_key": "id", "on_schema_change": "sometimes"},
        "on_schema_change 'sometimes' is not one of: ignore, fail, append_new_columns",
        "Use one of the four values.",
    ),
    Bad(
        "on_schema_change_fail",
        "`on_schema_change='fail'` and the SELECT's columns differ from the table",
        {"unique_key": "id", "on_schema_change": "fail"},
        "the SELECT's columns differ from",
        "Set `on_schema_change` to append_new_columns or sync_all_columns, or `--full-refresh`.",
        source_cols=[*TARGET_COLS, ("region", "str")],
        source_rows=_with(SOURCE_ROWS, region="eu"),
    ),
    Bad(
        "spark_parquet",
        "Spark: `file_format='parquet'` (no MERGE support)",
        {"unique_key": "id", "file_format": "parquet"},
        "file_format 'parquet' does not support MERGE on Spark",
        "Set `file_format` to iceberg, delta or hudi.",
        engines=("spark",),
    ),
    Bad(
        "spark_default_format",
        "Spark: no `file_format` (dbt-spark defaults to parquet)",
        {"unique_key": "id", "file_format": None},
        "file_format 'parquet' does not support MERGE on Spark",
        "Set `file_format='iceberg'` (or delta, hudi).",
        engines=("spark",),
    ),
    Bad(
        "type_mismatch_value",
        "type mismatch: a source column cannot be cast to the target column's type "
        "(string 'abc' into a double)",
        {"unique_key": "id"},
        {
            "duckdb": "Could not convert string 'abc' to DOUBLE",
            "spark": "Cannot safely cast",
        },
        "Cast the column in the SELECT to the table's type, or change the table "
        "(`on_schema_change='sync_all_columns'` / `--full-refresh`).",
        source_cols=[("id", "int"), ("name", "str"), ("amount", "str"), ("updated_at", "ts")],
        source_rows=_with(SOURCE_ROWS, amount="abc"),
        ours=False,
    ),
    Bad(
        "type_mismatch_key",
        "type mismatch: the key is a string in the SELECT but a number in the table",
        {"unique_key": "id"},
        {
            "duckdb": "unique_key column 'id' has type VARCHAR in the model's SELECT but BIGINT",
            "spark": "unique_key column 'id' has type string in the model's SELECT but bigint",
        },
        "Cast the key in the SELECT to the table's type.",
        source_cols=[("id", "str"), ("name", "str"), ("amount", "float"), ("updated_at", "ts")],
        source_rows=[{**SOURCE_ROWS[0], "id": "2"}, {**SOURCE_ROWS[1], "id": "3"}],
    ),
]
