"""One option table for the Python doors (dbt_merge.options): merge_dataframe, merge_table
and merge_parquet_dataset take the same keywords, named as the dbt config names them, checked
by one function. Pure: no engine."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from dbt_merge.duckdb import merge_table
from dbt_merge.errors import MergeError
from dbt_merge.options import OPTIONS, MergeOptions, merge_config
from dbt_merge.parquet import merge_parquet_dataset
from dbt_merge.spark import merge_dataframe

ROOT = Path(__file__).resolve().parents[1]


def test_every_door_takes_the_one_option_table():
    for door in (merge_dataframe, merge_table, merge_parquet_dataset):
        options = inspect.signature(door).parameters["options"]
        assert options.kind is inspect.Parameter.VAR_KEYWORD
        assert "MergeOptions" in str(options.annotation), door
    assert set(OPTIONS) == set(MergeOptions.__annotations__)


def test_every_option_is_a_dbt_config_key():
    keys = set(
        re.findall(r"'(\w+)'", (ROOT / "macros/validation/merge_config_keys.sql").read_text())
    )
    table_only = {"file_format", "tblproperties", "options", "full_refresh"}  # dbt's own keys
    assert set(OPTIONS) - table_only <= keys


def test_merge_config():
    cfg = merge_config(["id"], "upsert", {"dry_run": True, "merge_update_columns": None})
    assert cfg == {
        "strategy": "upsert",
        "unique_key": ["id"],
        "dry_run": True,
        "detect_unchanged": True,
        "max_delete_fraction": 0.5,
        "on_schema_change": "ignore",
    }
    with pytest.raises(
        MergeError,
        match=r"unknown option 'on_schema_chnage' \(did you mean "
        r"'on_schema_change'\?\)",
    ):
        merge_config("id", "upsert", {"on_schema_chnage": "fail"})
    refused = {"file_format": (("parquet",), "is not for files.")}
    assert "file_format" not in merge_config("id", "upsert", {}, refused=refused)
    assert merge_config("id", "upsert", {"file_format": "parquet"}, refused=refused)
    with pytest.raises(MergeError, match=r"^file_format='delta' is not for files\.$"):
        merge_config("id", "upsert", {"file_format": "delta"}, refused=refused)
