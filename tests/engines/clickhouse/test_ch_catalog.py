"""Engine detection, the FINAL probe and streaming reads against the embedded ClickHouse."""

from __future__ import annotations

import pytest
from ch_data import arrow_rows, clickhouse_rows
from dbt_merge.clickhouse.client import Catalog, TableNotFoundError
from dbt_merge.clickhouse.engines import Family
from dbt_merge.clickhouse.final_decision import FinalNotSupportedError

pytestmark = pytest.mark.clickhouse

EXPECTED = {
    # table: (family, uses FINAL by default, version, sign)
    "mt": (Family.MERGE_TREE, False, None, None),
    "rmt": (Family.REPLACING, True, "ver", None),
    "cmt": (Family.COLLAPSING, True, None, "sign"),
    "vcmt": (Family.VERSIONED_COLLAPSING, True, "ver", "sign"),
    "coal": (Family.COALESCING, True, None, None),
    "smt": (Family.SUMMING, False, None, None),
    "amt": (Family.AGGREGATING, False, None, None),
    "logt": (Family.UNKNOWN, False, None, None),
    "mv": (Family.UNKNOWN, True, None, None),
    "vw": (Family.VIEW, False, None, None),
    "pvw": (Family.PARAMETERIZED_VIEW, False, None, None),
    "dist": (Family.REPLACING, True, "ver", None),
}


@pytest.fixture()
def catalog(ch):
    return Catalog(ch)


@pytest.mark.parametrize("table", sorted(EXPECTED))
def test_engine_and_default_decision(catalog, table):
    family, final, version, sign = EXPECTED[table]
    plan = catalog.plan("ch_a", table, None)
    assert plan.table.engine.effective.family is family
    assert plan.decision.use_final is final, plan.decision.reason
    assert plan.table.engine.effective.version_column == version
    assert plan.table.engine.effective.sign_column == sign


def test_engine_details_from_real_tables(catalog):
    rmt = catalog.table("ch_a", "rmt")
    assert rmt.engine.is_deleted_column == "is_deleted"
    assert rmt.sorting_key == "k"
    assert catalog.table("ch_a", "smt").engine.columns == ("a", "b")
    dist = catalog.table("ch_a", "dist")
    assert dist.engine.family is Family.DISTRIBUTED
    assert dist.engine.distributed_target == ("ch_a", "rmt")


def test_one_system_tables_query_per_table_per_run(catalog):
    for _ in range(3):
        catalog.plan("ch_a", "rmt", None)
        catalog.plan("ch_a", "cmt", True)
    assert catalog.queries == 2


def test_probe_runs_once_and_only_for_unknown_engines(ch):
    calls = []

    class Counting:
        def query(self, sql, parameters=None, **kw):
            calls.append(sql)
            return ch.query(sql, parameters=parameters, **kw)

    catalog = Catalog(Counting())
    for _ in range(2):
        catalog.plan("ch_a", "logt", None)
        catalog.plan("ch_a", "mv", None)
        catalog.plan("ch_a", "rmt", None)
    probes = [sql for sql in calls if "FINAL LIMIT 0" in sql]
    assert len(probes) == 2
    assert all("{database:Identifier}.{table:Identifier}" in sql for sql in calls if "FINAL" in sql)


def test_probe_raises_errors_other_than_final_not_supported(catalog):
    with pytest.raises(Exception, match="UNKNOWN_TABLE|does not exist"):
        catalog.final_supported("ch_a", "no_such_table")


def test_missing_table(catalog):
    with pytest.raises(TableNotFoundError, match="ch_a.nope"):
        catalog.plan("ch_a", "nope", None)


@pytest.mark.parametrize("table", ["mt", "logt", "vw"])
def test_forcing_final_where_impossible_fails_before_loading(catalog, table):
    with pytest.raises(FinalNotSupportedError, match=rf"source src\.{table}: use_final is true"):
        catalog.plan("ch_a", table, True, source=f"src.{table}")


def test_names_are_bound_not_pasted(catalog, ch):
    ch.command("CREATE DATABASE IF NOT EXISTS `odd db`")
    ch.command(
        "CREATE TABLE IF NOT EXISTS `odd db`.`t; DROP TABLE x; --` (k UInt8)"
        " ENGINE = ReplacingMergeTree ORDER BY k"
    )
    ch.command("INSERT INTO `odd db`.`t; DROP TABLE x; --` VALUES (1)")
    plan = catalog.plan("odd db", "t; DROP TABLE x; --", None)
    assert plan.decision.use_final
    assert catalog.stream(plan).read_all().num_rows == 1


@pytest.mark.parametrize("table", sorted(set(EXPECTED) - {"pvw"}))
@pytest.mark.parametrize("use_final", [None, False])
def test_stream_equals_clickhouse(catalog, ch, table, use_final):
    plan = catalog.plan("ch_a", table, use_final)
    got = arrow_rows(catalog.stream(plan).read_all())
    assert got == clickhouse_rows(ch, "ch_a", table, plan.decision.use_final)


def test_stream_is_batches_not_one_table(ch):
    ch.command("CREATE TABLE IF NOT EXISTS ch_a.big (k UInt64) ENGINE = MergeTree ORDER BY k")
    ch.command("TRUNCATE TABLE ch_a.big")
    ch.command("INSERT INTO ch_a.big SELECT number FROM numbers(300000)")
    catalog = Catalog(ch)
    reader = catalog.stream(catalog.plan("ch_a", "big", None))
    sizes = [batch.num_rows for batch in reader]
    assert sum(sizes) == 300000
    assert len(sizes) > 1


def test_empty_table_streams_its_schema(ch):
    ch.command("CREATE TABLE IF NOT EXISTS ch_a.empty (k UInt8, v String) ENGINE = Log")
    catalog = Catalog(ch)
    reader = catalog.stream(catalog.plan("ch_a", "empty", None))
    assert reader.schema.names == ["k", "v"]
    assert reader.read_all().num_rows == 0


def test_parameterized_view_cannot_be_loaded(catalog):
    plan = catalog.plan("ch_a", "pvw", None)
    with pytest.raises(ValueError, match="parameterized view"):
        catalog.stream(plan)


def test_distributed_whose_table_is_not_local_is_probed(ch):
    ch.command(
        "CREATE TABLE IF NOT EXISTS ch_a.dist_remote (k UInt32)"
        " ENGINE = Distributed('one_shard', 'ch_a', 'only_on_shards')"
    )
    catalog = Catalog(ch)
    info = catalog.table("ch_a", "dist_remote")
    assert info.engine.family is Family.DISTRIBUTED and info.engine.target is None
    assert catalog.plan("ch_a", "dist_remote", False).decision.use_final is False
    with pytest.raises(Exception, match="only_on_shards"):
        catalog.plan("ch_a", "dist_remote", None)
