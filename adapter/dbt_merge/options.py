"""The merge options every Python door takes: one table, one check.

`merge_dataframe` (Spark) and `merge_parquet_dataset` (a folder of Parquet files) take the same
keywords, named as the dbt config names them, with the same defaults (`OPTIONS`). A door passes
what it was given to `merge_config`, which returns the dbt config the shared macros read
(`validate_merge_config` checks the values) and refuses, naming the option and the reason, an
option the door cannot apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from dbt_merge.errors import MergeError


class MergeOptions(TypedDict, total=False):
    """The keywords of every Python door (the dbt config option of the same name)."""

    dedup_order_by: str | Sequence[str] | None
    merge_update_columns: Sequence[str] | None
    merge_exclude_columns: Sequence[str] | None
    merge_check_columns: Sequence[str] | None
    detect_unchanged: bool
    incremental_predicates: str | Sequence[str] | None
    on_key_outside_predicates: str | None
    max_delete_fraction: float
    on_schema_change: str
    merge_update_condition: str | None
    delete_condition: str | None
    soft_delete_column: str | None
    soft_delete_timestamp_column: str | None
    full_merge_write: str | None
    dry_run: bool
    merge_history_table: str | None
    file_format: str | None
    partition_by: str | Sequence[str] | None
    tblproperties: dict[str, str] | None
    options: dict[str, str] | None
    full_refresh: bool
    # strategy='history' (dbt snapshots' names)
    updated_at: str | None
    hard_deletes: str | None
    check_cols: str | Sequence[str] | None
    dbt_valid_to_current: str | None
    snapshot_meta_column_names: dict[str, str] | None
    late_rows: str | None


#: Each option and its default (as dbt reads an unset config option).
OPTIONS: dict[str, Any] = {
    "dedup_order_by": None,
    "merge_update_columns": None,
    "merge_exclude_columns": None,
    "merge_check_columns": None,
    "detect_unchanged": True,
    "incremental_predicates": None,
    "on_key_outside_predicates": None,
    "max_delete_fraction": 0.5,
    "on_schema_change": "ignore",
    "merge_update_condition": None,
    "delete_condition": None,
    "soft_delete_column": None,
    "soft_delete_timestamp_column": None,
    "full_merge_write": None,
    "dry_run": False,
    "merge_history_table": None,
    "file_format": None,
    "partition_by": None,
    "tblproperties": None,
    "options": None,
    "full_refresh": False,
    "updated_at": None,
    "hard_deletes": None,
    "check_cols": None,
    "dbt_valid_to_current": None,
    "snapshot_meta_column_names": None,
    "late_rows": None,
}
assert set(OPTIONS) == set(MergeOptions.__annotations__)

#: the keywords every door names itself (not options), among which a misspelling is looked up too
DOOR_KEYWORDS = ("key_columns", "strategy")
#: dbt config names whose door keyword is another
DBT_NAMES = {"unique_key": "key_columns"}


def _edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a):
        current = [i + 1]
        for j, y in enumerate(b):
            current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x != y)))
        previous = current
    return previous[-1]


def closest_keyword(name: str, known: Sequence[str]) -> str | None:
    """The known keyword closest to `name` (case aside) if it is close enough to be a typo of it:
    the rule of the macros' check_config_keys (a dbt model fails on one within 2 edits)."""
    limit = max(2, len(name) // 3)
    best, distance = None, limit + 1
    for candidate in known:
        d = _edit_distance(name.lower(), candidate)
        if d < distance:
            best, distance = candidate, d
    return best


def merge_config(
    key_columns: str | Sequence[str],
    strategy: str,
    given: Mapping[str, Any],
    *,
    refused: Mapping[str, tuple[tuple[Any, ...], str]] | None = None,
    fail=None,
) -> dict[str, Any]:
    """The dbt config of one call: unique_key, strategy and every option of OPTIONS (the
    default where not given). An unknown keyword is refused with the closest name (of the options
    and DOOR_KEYWORDS; dbt's unique_key pointed to key_columns), as a dbt model is for a
    misspelt config key; an option of
    `refused` ({name: (the values the door accepts, why not another)}) set to another value is
    refused with its reason. fail(message) raises the door's error (default MergeError)."""

    def refuse(message: str) -> None:
        if fail is None:
            raise MergeError(message)
        fail(message)

    for name in given:
        if name in DBT_NAMES:
            refuse(f"unknown option '{name}': the key is {DBT_NAMES[name]}= here ('{name}' is "
                   "its name in a dbt model's config).")
        if name not in OPTIONS:
            close = closest_keyword(name, [*DOOR_KEYWORDS, *OPTIONS])
            refuse(
                f"unknown option '{name}'"
                + (f" (did you mean '{close}'?)" if close else "")
                + f". The options are: {', '.join(OPTIONS)}."
            )
    options = {name: given.get(name, default) for name, default in OPTIONS.items()}
    for name, (accepted, reason) in (refused or {}).items():
        value = options[name]
        if value is not None and value not in accepted:
            refuse(f"{name}={value!r} {reason}")
    config = {"strategy": strategy, "unique_key": key_columns}
    # an option not given is left out, as in a dbt model: config.get(name, default) applies
    config.update({k: v for k, v in options.items() if k != "full_refresh" and v is not None})
    return config
