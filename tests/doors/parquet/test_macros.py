"""The Python side renders the package's own macros (one plan, one set of checks): the stand-in
for dbt's macro context, and that both sides read the one strategy table."""

from __future__ import annotations

import duckdb
import pytest
from dbt_merge.parquet import ParquetMergeError
from dbt_merge.parquet.sql import Column
from dbt_merge.render import MacroContext, macros_dir
from support.reference import STRATEGIES


def context(config: dict, con=None) -> MacroContext:
    con = con or duckdb.connect()

    def run(sql: str):
        cur = con.execute(sql)
        return [d[0] for d in cur.description], cur.fetchall()

    def fail(message: str):
        raise ParquetMergeError(message)

    return MacroContext(config, run, fail)


def test_the_strategy_table_is_the_macros_table():
    """merge_strategies() (macros/plan/merge_strategies.sql) is what the Python side plans with,
    and it says what the reference model says."""
    table = context({}).merge_strategies()
    rows = {
        name: (a["matched"], a["source_only"], a["target_only"], a["dedupe"])
        for name, a in table.items()
    }
    # history's classes and writes are its own (reference.history_merge); its row of the table
    # is what validate_history_config starts from
    assert rows.pop("history") == ("update", "insert", "keep", False)
    assert rows == STRATEGIES
    cfg = context({"strategy": "full_merge", "unique_key": "id"}).validate_merge_config()
    assert cfg["actions"] is not table["full_merge"] and cfg["actions"] == table["full_merge"]


def test_config_validation_is_the_materializations():
    with pytest.raises(ParquetMergeError, match="strategy 'upsrt' is not one of: upsert, insert"):
        context({"strategy": "upsrt", "unique_key": "id"}).validate_merge_config()
    with pytest.raises(ParquetMergeError, match="merge_update_columns and merge_exclude_columns"):
        context(
            {"unique_key": "id", "merge_update_columns": ["a"], "merge_exclude_columns": ["b"]}
        ).validate_merge_config()


def test_plan_and_checks_run_sql_through_the_context():
    con = duckdb.connect()
    con.execute(
        "create table stage as select * from (values (1, 'a'), (1, 'b'), (2, 'c')) t(id, v)"
    )
    m = context({"strategy": "upsert", "unique_key": ["ID"]}, con)
    cfg = m.validate_merge_config()
    relations = {
        "target": "t",
        "stage": "stage",
        "converted": "cv",
        "deduped": None,
        "changes": "c",
    }
    columns = [Column("id", "INTEGER"), Column("v", "VARCHAR")]
    schema = {
        "target_columns": columns,
        "names": ["id", "v"],
        "added": [],
        "removed": [],
        "retyped": [],
    }
    plan = m.build_merge_plan(cfg, relations, columns, schema)
    assert plan["key_columns"] == ["id"] and plan["update_columns"] == ["v"]
    assert plan["writes_source_rows"] is True
    with pytest.raises(ParquetMergeError, match=r"occur more than once .* e.g. \(id\) = \(1\)"):
        m.check_source_rows(plan)
    # private macros (leading underscore) are reachable, as dbt makes them
    # a text column is compared byte for byte, whatever collation DuckDB would use
    changed = m.get("row_changed_condition")(plan)
    assert changed == (
        '((cast(DBT_INTERNAL_SOURCE."v" as varchar) collate c)'
        ' is distinct from (cast(DBT_INTERNAL_DEST."v" as varchar) collate c))'
    )


def test_dispatch_prefers_duckdb_then_default():
    m = context({})
    assert m.row_value(["a", "b"]) == 'row("a", "b")'  # duckdb__row_value
    assert m.changed_condition("x", "y") == "x is distinct from y"  # default__ only


def test_an_unknown_name_in_a_macro_fails_loudly(tmp_path, monkeypatch):
    """A macro that starts to use more of dbt's context than the stand-in offers raises, instead
    of rendering something else."""
    import shutil

    copy = tmp_path / "macros"
    shutil.copytree(macros_dir(), copy)
    (copy / "utils" / "uses_this.sql").write_text(
        "{% macro uses_this() %}{{ return(this.identifier) }}{% endmacro %}"
    )
    monkeypatch.setenv("DBT_MERGE_MACROS", str(copy))
    with pytest.raises(Exception, match="'this' is undefined"):
        context({}).uses_this()
