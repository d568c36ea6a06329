"""End to end on Spark: `dbt-merge land` lands the project's ClickHouse sources into Iceberg,
then the project's dbt-spark models read them with `source()`; reruns replace atomically."""

from __future__ import annotations

import pytest
from ch_data import FINAL_MATTERS, PROJECT_SOURCES, clickhouse_rows, project_args, rows
from dbt_merge.cli import main
from dbt_merge.clickhouse.client import Catalog
from dbt_merge.sources import ClickHouseSource
from dbt_merge.spark.loader import land

pytestmark = [pytest.mark.clickhouse, pytest.mark.spark]


@pytest.fixture(scope="module")
def landed(spark, ch, tmp_path_factory):
    """Land the project's sources, then `dbt run` its models on the Spark target."""
    from contextlib import redirect_stdout
    from io import StringIO

    from dbt.cli.main import dbtRunner

    out = StringIO()
    with redirect_stdout(out):
        code = main(["land", *project_args("spark")])
    assert code == 0, out.getvalue()
    folder = tmp_path_factory.mktemp("ch_spark")
    result = dbtRunner().invoke(["run", *project_args("spark", folder)])
    assert result.success, result.exception
    return out.getvalue()


def test_land_prints_one_line_per_source(landed):
    lines = landed.splitlines()
    assert lines[0].split() == ["source", "spark", "table", "rows", "FINAL"]
    assert len(lines) == 2 + len(PROJECT_SOURCES)
    assert ["ch.rmt", "`ch_a`.`rmt`", "2", "yes"] in [line.split() for line in lines]


@pytest.mark.parametrize(("source", "db", "table", "final"), PROJECT_SOURCES)
def test_spark_source_and_model_equal_clickhouse_per_decision(
    landed, spark, ch, source, db, table, final
):
    expected = clickhouse_rows(ch, db, table, final)
    assert rows(spark.table(f"{db}.{table}").collect()) == expected
    prefix = "a" if source == "ch" else "b"
    assert rows(spark.table(f"analytics.{prefix}_{table}").collect()) == expected
    if table in FINAL_MATTERS:
        assert expected != clickhouse_rows(ch, db, table, not final)


@pytest.fixture()
def rerun_table(ch):
    ch.command("DROP TABLE IF EXISTS ch_a.rerun")
    ch.command(
        "CREATE TABLE ch_a.rerun (k UInt32, v String, ver UInt32)"
        " ENGINE = ReplacingMergeTree(ver) ORDER BY k"
    )
    ch.command("SYSTEM STOP MERGES ch_a.rerun")
    ch.command("INSERT INTO ch_a.rerun VALUES (1, 'a', 1), (2, 'b', 1)")
    ch.command("INSERT INTO ch_a.rerun VALUES (1, 'a2', 2)")
    return ClickHouseSource("ch", "rerun", "ch_a", "rerun", None)


def test_rerun_replaces_in_one_commit_and_a_failed_run_changes_nothing(
    spark, ch, rerun_table, monkeypatch
):
    land(spark, Catalog(ch), rerun_table)
    assert rows(spark.table("ch_a.rerun").collect()) == [(1, "a2", 2), (2, "b", 1)]
    snapshots = spark.table("ch_a.rerun.snapshots").count()

    ch.command("INSERT INTO ch_a.rerun VALUES (2, 'b2', 2), (3, 'c', 1)")
    land(spark, Catalog(ch), rerun_table)
    assert rows(spark.table("ch_a.rerun").collect()) == [(1, "a2", 2), (2, "b2", 2), (3, "c", 1)]
    assert spark.table("ch_a.rerun.snapshots").count() == snapshots + 1

    ch.command("INSERT INTO ch_a.rerun VALUES (4, 'd', 1)")
    real_stream = Catalog.stream

    def failing_stream(self, plan, settings=None):
        reader = real_stream(self, plan, settings)

        def batches():
            yield from reader
            raise ConnectionError("ClickHouse went away mid-stream")

        import pyarrow as pa

        return pa.RecordBatchReader.from_batches(reader.schema, batches())

    monkeypatch.setattr(Catalog, "stream", failing_stream)
    with pytest.raises(ConnectionError):
        land(spark, Catalog(ch), rerun_table)
    assert rows(spark.table("ch_a.rerun").collect()) == [(1, "a2", 2), (2, "b2", 2), (3, "c", 1)]
    assert spark.table("ch_a.rerun.snapshots").count() == snapshots + 1
