"""The bad-input catalogue: every input we know to be wrong, the error it must raise, the fix.

The error table of docs/errors.md is this list (test_bad_inputs checks the two agree). Each entry is
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
    target_rows: list = field(default_factory=lambda: [dict(r) for r in TARGET_ROWS])
    # the model's SELECT, `{source}` standing for the source relation (default: select *)
    select: str | dict[str, str] = "select * from {source}"

    def select_sql(self, engine: str, source: str) -> str:
        sql = self.select if isinstance(self.select, str) else self.select[engine]
        return sql.format(source=source)

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
        "spark_text_format",
        "Spark: a `file_format` the merge cannot rewrite faithfully (csv, json, text)",
        {"unique_key": "id", "file_format": "csv"},
        "file_format 'csv' is not supported on Spark",
        "Use iceberg, delta or hudi (MERGE INTO), or parquet, orc or Hive parquet/orc (partition "
        "overwrite).",
        engines=("spark",),
    ),
    Bad(
        "spark_hive_text",
        "Spark: `file_format='hive'` without `options={'fileFormat': 'parquet'}` (Hive text)",
        {"unique_key": "id", "file_format": "hive"},
        "file_format 'hive' creates a Hive table of text files unless",
        "Add `options={'fileFormat': 'parquet'}` (or `'orc'`).",
        engines=("spark",),
    ),
    Bad(
        "key_not_storable",
        "a key value the target's key type cannot hold (1e300 into a BIGINT key)",
        {"unique_key": "id"},
        "column 'id' has 1 value(s) that cannot be stored in the target's type",
        "Convert or filter the keys in the SELECT.",
        select="select cast(case when id = 2 then 2.0 else 1e300 end as double) as id,"
        " name, amount, updated_at from {source}",
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
    Bad(
        "key_narrows_to_duplicate",
        "keys distinct in the SELECT become one key in the target's type (DECIMAL 2.2 and 2.4 "
        "into a BIGINT key)",
        {"unique_key": "id"},
        "1 unique_key value(s) occur more than once in the model's SELECT, e.g. (id) = (2) "
        "(keys compared as the target stores them: id as",
        "Make the keys unique in the target's type (round or cast them in the SELECT yourself).",
        select="select cast(case when id = 2 then 2.2 else 2.4 end as decimal(5, 1)) as id, name,"
        " amount, updated_at from {source}",
    ),
    Bad(
        "timestamps_into_date_key",
        "two timestamps of one day into a DATE key",
        {"unique_key": "day"},
        "1 unique_key value(s) occur more than once in the model's SELECT,"
        " e.g. (day) = (2024-02-01)",
        "Truncate the timestamps to the key's type in the SELECT and deduplicate "
        "(`strategy='deduplicate'`).",
        target_cols=[("day", "date"), ("name", "str")],
        target_rows=[{"day": dt.date(2024, 1, 1), "name": "a"}],
        source_cols=[("day", "ts"), ("name", "str")],
        source_rows=[{"day": T1, "name": "x"}, {"day": T1 + dt.timedelta(hours=5), "name": "y"}],
    ),
    Bad(
        "target_duplicate_key",
        "the existing table already holds a key of the SELECT twice (made outside the package)",
        {"unique_key": "id"},
        "already holds 1 extra row(s) for keys of the SELECT, e.g. (id) = (2)",
        "Remove the duplicate rows from the table, or rebuild it with `--full-refresh`.",
        target_rows=[*TARGET_ROWS, {**TARGET_ROWS[1], "name": "b again"}],
    ),
    Bad(
        "key_outside_predicates",
        "a SELECT row whose key the table holds only outside `incremental_predicates`",
        {"unique_key": "id", "incremental_predicates": ["DBT_INTERNAL_DEST.id >= 3"]},
        "1 row(s) of the SELECT have a key that the target holds only outside "
        "incremental_predicates, e.g. (id) = (2)",
        "Widen the predicates, filter those rows out of the SELECT, or set "
        "`on_key_outside_predicates='insert'` (dbt's behaviour: a second row for that key).",
    ),
    Bad(
        "delete_outside_predicates",
        "a row `delete_condition` marks, whose key the table holds only outside "
        "`incremental_predicates` (the delete cannot reach that row)",
        {"unique_key": "id", "incremental_predicates": ["DBT_INTERNAL_DEST.id >= 3"],
         "delete_condition": "DBT_INTERNAL_SOURCE.id = 2"},
        "1 row(s) of the SELECT have a key that the target holds only outside "
        "incremental_predicates, e.g. (id) = (2): inserting them would give the table that key "
        "twice (and a row for which delete_condition is true could not delete it)",
        "Widen the predicates so that they cover the rows to delete.",
        source_rows=[dict(SOURCE_ROWS[0])],
    ),
    Bad(
        "key_outside_predicates_unknown",
        "`on_key_outside_predicates` not one of fail, insert",
        {"unique_key": "id", "on_key_outside_predicates": "skip"},
        "on_key_outside_predicates 'skip' is not one of: fail, insert",
        "Use `fail` (default) or `insert`.",
    ),
    Bad(
        "predicate_names_source",
        "an `incremental_predicates` condition naming `DBT_INTERNAL_SOURCE`",
        {"unique_key": "id", "incremental_predicates": ["DBT_INTERNAL_SOURCE.id > 0"]},
        "incremental_predicates condition 'DBT_INTERNAL_SOURCE.id > 0' names DBT_INTERNAL_SOURCE",
        "Name target columns only (`DBT_INTERNAL_DEST.<column>`); filter the SELECT itself.",
    ),
    Bad(
        "mass_delete_empty_select",
        "full_merge with an empty SELECT (an empty upstream) against a non-empty table",
        {"strategy": "full_merge", "unique_key": "id"},
        "full_merge would delete 2 of the 2 target rows it considers (100.0%), more than "
        "max_delete_fraction=0.5 allows: the SELECT is empty",
        "Check the model and its upstream; set `max_delete_fraction=1` if deleting everything is "
        "intended.",
        source_rows=[],
    ),
    Bad(
        "mass_delete_fraction",
        "full_merge would delete more than `max_delete_fraction` of the table's rows",
        {"strategy": "full_merge", "unique_key": "id", "max_delete_fraction": 0.4},
        "full_merge would delete 1 of the 2 target rows it considers (50.0%), more than "
        "max_delete_fraction=0.4 allows",
        "Check the SELECT (a leftover filter, e.g. `is_incremental()`); raise "
        "`max_delete_fraction` if intended.",
    ),
    Bad(
        "max_delete_fraction_invalid",
        "`max_delete_fraction` not a number from 0 to 1",
        {"strategy": "full_merge", "unique_key": "id", "max_delete_fraction": 2},
        "max_delete_fraction 2 is not a number from 0 to 1",
        "Set a fraction from 0 to 1 (default 0.5; 1 allows any delete).",
    ),
    Bad(
        "spark_retype_impossible",
        "Spark: `on_schema_change='sync_all_columns'` would change a column's type in a way the "
        "table format cannot (double to string)",
        {"unique_key": "id", "on_schema_change": "sync_all_columns"},
        "on_schema_change='sync_all_columns' would change column 'amount'",
        "Cast the column in the SELECT to the table's type, or `--full-refresh`.",
        source_cols=[("id", "int"), ("name", "str"), ("amount", "str"), ("updated_at", "ts")],
        source_rows=_with(SOURCE_ROWS, amount="x"),
        engines=("spark",),
    ),
    Bad(
        "spark_map_compared",
        "Spark: a MAP column that the merge must compare (deduplicate compares whole rows)",
        {"strategy": "deduplicate", "unique_key": "id"},
        "Spark cannot compare MAP values",
        "Exclude it with `merge_exclude_columns`, or convert it in the SELECT (`to_json`).",
        select="select *, map('k', id) as tags from {source}",
        engines=("spark",),
    ),
    Bad(
        "spark_null_column",
        "Spark: a bare `null as x` column (type void)",
        {"unique_key": "id", "on_schema_change": "append_new_columns"},
        "column 'note' of the SELECT has no type (it is a bare NULL)",
        "Cast it: `cast(null as string) as note`.",
        select="select *, null as note from {source}",
        engines=("spark",),
    ),
    Bad(
        "spark_iceberg_reserved_name",
        "Spark/Iceberg: a column named like an Iceberg metadata column (`_pos`, `_file`, ...)",
        {"unique_key": "id", "on_schema_change": "append_new_columns"},
        "column '_pos' has a name Iceberg reserves for metadata columns",
        "Rename the column in the SELECT.",
        select="select *, id as _pos from {source}",
        engines=("spark",),
    ),
    Bad(
        "spark_timestamp_ntz_key",
        "Spark: a TIMESTAMP_NTZ key against a TIMESTAMP key (matches depend on the session time "
        "zone)",
        {"unique_key": ["id", "updated_at"]},
        "unique_key column 'updated_at' is timestamp_ntz in the SELECT but timestamp",
        "Cast the key in the SELECT to the table's type, stating the time zone.",
        select="select id, name, amount, cast(updated_at as timestamp_ntz) as updated_at"
        " from {source}",
        engines=("spark",),
    ),
    Bad(
        "update_condition_wrong_strategy",
        "`merge_update_condition` with strategy `insert` (which never updates)",
        {"strategy": "insert", "unique_key": "id",
         "merge_update_condition": "DBT_INTERNAL_SOURCE.updated_at > DBT_INTERNAL_DEST.updated_at"},
        "merge_update_condition is set but strategy 'insert' never updates a row",
        "Use upsert, update, full_merge or deduplicate, or remove the condition.",
    ),
    Bad(
        "condition_unknown_column",
        "a condition naming a column the SELECT (or the table) does not have",
        {"unique_key": "id", "merge_update_condition": "DBT_INTERNAL_SOURCE.version > 1"},
        "merge_update_condition names DBT_INTERNAL_SOURCE.version, which is not a column of the "
        "model's SELECT",
        "Fix the condition (`DBT_INTERNAL_SOURCE.<column>` of the SELECT, "
        "`DBT_INTERNAL_DEST.<column>` of the table).",
    ),
    Bad(
        "delete_condition_names_dest",
        "`delete_condition` naming `DBT_INTERNAL_DEST`",
        {"unique_key": "id", "delete_condition": "DBT_INTERNAL_DEST.amount < 0"},
        "delete_condition 'DBT_INTERNAL_DEST.amount < 0' names DBT_INTERNAL_DEST",
        "Write it over the SELECT's row only, e.g. `DBT_INTERNAL_SOURCE.op = 'D'`.",
    ),
    Bad(
        "delete_condition_wrong_strategy",
        "`delete_condition` with strategy `insert`",
        {"strategy": "insert", "unique_key": "id",
         "delete_condition": "DBT_INTERNAL_SOURCE.id < 0"},
        "delete_condition is set but strategy 'insert' never deletes",
        "Use upsert, update, full_merge or deduplicate.",
    ),
    Bad(
        "soft_delete_wrong_strategy",
        "`soft_delete_column` with a strategy that deletes nothing (no `delete_condition`)",
        {"unique_key": "id", "soft_delete_column": "is_deleted"},
        "soft_delete_column is set, but strategy 'upsert' deletes nothing without delete_condition",
        "Use `strategy='full_merge'` or set `delete_condition`.",
    ),
    Bad(
        "soft_delete_timestamp_alone",
        "`soft_delete_timestamp_column` without `soft_delete_column`",
        {"strategy": "full_merge", "unique_key": "id",
         "soft_delete_timestamp_column": "deleted_at"},
        "soft_delete_timestamp_column is set without soft_delete_column",
        "Set `soft_delete_column` too.",
    ),
    Bad(
        "soft_delete_column_not_in_table",
        "`soft_delete_column` missing from an existing table (with `on_schema_change='ignore'`)",
        {"strategy": "full_merge", "unique_key": "id", "soft_delete_column": "is_deleted"},
        "soft_delete column 'is_deleted' is not a column of the target",
        "Add it with `on_schema_change='append_new_columns'`, or `--full-refresh`.",
    ),
    Bad(
        "check_columns_and_no_detection",
        "both `merge_check_columns` and `detect_unchanged=false`",
        {"unique_key": "id", "merge_check_columns": ["updated_at"], "detect_unchanged": False},
        "merge_check_columns and detect_unchanged=false are both set",
        "Set only one of them.",
    ),
    Bad(
        "check_columns_unknown",
        "`merge_check_columns` names a column that does not exist",
        {"unique_key": "id", "merge_check_columns": ["updated"]},
        "merge_check_columns names column 'updated', which is not a non-key column",
        "Fix `merge_check_columns`.",
    ),
    Bad(
        "detect_unchanged_invalid",
        "`detect_unchanged` not true or false",
        {"unique_key": "id", "detect_unchanged": "sometimes"},
        "detect_unchanged sometimes is not true or false",
        "Set `detect_unchanged` to true (default) or false.",
    ),
    Bad(
        "full_merge_write_invalid",
        "`full_merge_write` not one of auto, merge, overwrite",
        {"strategy": "full_merge", "unique_key": "id", "full_merge_write": "always"},
        "full_merge_write 'always' is not one of: auto, merge, overwrite",
        "Use `auto` (default), `merge` or `overwrite`.",
    ),
]
