"""Land ClickHouse sources into Spark Iceberg tables, FINAL-aware, replacing each atomically.

Rows stream from ClickHouse as Arrow batches into Parquet files in a staging folder (memory
stays bounded by one batch), then one `createOrReplace` (Iceberg's REPLACE TABLE AS SELECT)
swaps the table in a single metadata commit: readers see the old rows or the new ones, never
a mix, and a failure before the commit leaves the old table as it was.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from dbt_merge.clickhouse.client import Catalog, ReadPlan
from dbt_merge.sources import ClickHouseSource
from dbt_merge.spark.session import quote

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Landed:
    source: ClickHouseSource
    spark_table: str
    rows: int
    plan: ReadPlan


def spark_table_name(source: ClickHouseSource) -> str:
    """Where dbt-spark's `source()` looks for the source: `<schema>.<identifier>`."""
    return f"{quote(source.database)}.{quote(source.table)}"


def stage(catalog: Catalog, plan: ReadPlan, folder: Path) -> int:
    """Stream the plan's rows into one Parquet file in `folder`; return the row count."""
    reader = catalog.stream(plan)
    rows = 0
    with pq.ParquetWriter(folder / "part-00000.parquet", reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)
            rows += batch.num_rows
    return rows


def land(
    spark: Any,
    catalog: Catalog,
    source: ClickHouseSource,
    plan: ReadPlan | None = None,
    staging_dir: str | Path | None = None,
) -> Landed:
    """Land one source into its Spark Iceberg table; the replace is one atomic commit."""
    if plan is None:
        plan = catalog.plan(source.database, source.table, source.use_final, source.label)
    root = Path(staging_dir or tempfile.gettempdir())
    folder = root / f"dbt_merge_stage_{uuid.uuid4().hex}"
    folder.mkdir(parents=True)
    try:
        rows = stage(catalog, plan, folder)
        spark.sql("CREATE DATABASE IF NOT EXISTS IDENTIFIER(:db)", args={"db": source.database})
        name = spark_table_name(source)
        spark.read.parquet(str(folder)).writeTo(name).using("iceberg").createOrReplace()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    logger.info(
        "landed %s into %s: %d rows (FINAL=%s)", source.label, name, rows, plan.decision.use_final
    )
    return Landed(source, name, rows, plan)
