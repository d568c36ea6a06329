"""Talk to ClickHouse: engine lookup (cached per run), the FINAL probe, streaming Arrow reads."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from dbt_merge.clickhouse.config import ClickHouseConfig
from dbt_merge.clickhouse.engines import EngineInfo, Family, parse_engine
from dbt_merge.clickhouse.final_decision import FinalDecision, decide

logger = logging.getLogger(__name__)

TABLE_QUERY = (
    "SELECT engine, engine_full, as_select, sorting_key FROM system.tables"
    " WHERE database = {database:String} AND name = {table:String}"
)
SELECT_QUERY = "SELECT * FROM {database:Identifier}.{table:Identifier}"
ILLEGAL_FINAL = 181
_MAX_DISTRIBUTED_DEPTH = 8


class TableNotFoundError(LookupError):
    """The source table does not exist in ClickHouse."""


def connect(config: ClickHouseConfig) -> Any:
    """A clickhouse-connect client (HTTP(S) or `chdb://`) for `config`."""
    import clickhouse_connect

    logger.info("connecting to ClickHouse with %r", config)
    return clickhouse_connect.get_client(**config.client_kwargs())


@dataclass(frozen=True)
class TableInfo:
    database: str
    table: str
    engine: EngineInfo
    sorting_key: str


@dataclass(frozen=True)
class ReadPlan:
    """What a load of one source will run."""

    table: TableInfo
    decision: FinalDecision

    @property
    def query(self) -> str:
        return SELECT_QUERY + (" FINAL" if self.decision.use_final else "")

    @property
    def parameters(self) -> dict[str, str]:
        return {"database": self.table.database, "table": self.table.table}


class Catalog:
    """Engine lookups and FINAL probes for one run: one `system.tables` query per table."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._tables: dict[tuple[str, str], TableInfo] = {}
        self._probes: dict[tuple[str, str], bool] = {}
        self.queries = 0

    def table(self, database: str, table: str, _depth: int = 0) -> TableInfo:
        """The table's engine (a Distributed table's target resolved), cached."""
        key = (database, table)
        if key not in self._tables:
            self.queries += 1
            rows = self.client.query(
                TABLE_QUERY, parameters={"database": database, "table": table}
            ).result_rows
            if not rows:
                raise TableNotFoundError(f"ClickHouse table {database}.{table} does not exist")
            engine, engine_full, as_select, sorting_key = rows[0]
            info = parse_engine(engine, engine_full, as_select)
            if info.family is Family.DISTRIBUTED and info.distributed_target:
                if _depth >= _MAX_DISTRIBUTED_DEPTH:
                    raise ValueError(f"Distributed chain too deep at {database}.{table}")
                target_db, target_table = info.distributed_target
                try:
                    target = self.table(target_db or database, target_table, _depth + 1)
                except TableNotFoundError:
                    # The local table lives only on the shards: the engine stays unresolved,
                    # and an automatic decision probes FINAL through the Distributed table.
                    target = None
                if target is not None:
                    info = replace(info, target=target.engine)
                    sorting_key = sorting_key or target.sorting_key
            self._tables[key] = TableInfo(database, table, info, sorting_key or "")
        return self._tables[key]

    def final_supported(self, database: str, table: str) -> bool:
        """Probe `SELECT * FROM t FINAL LIMIT 0` once; False only for ClickHouse's ILLEGAL_FINAL."""
        key = (database, table)
        if key not in self._probes:
            try:
                self.client.query(
                    SELECT_QUERY + " FINAL LIMIT 0",
                    parameters={"database": database, "table": table},
                )
                self._probes[key] = True
            except Exception as error:
                if getattr(error, "code", None) != ILLEGAL_FINAL and "ILLEGAL_FINAL" not in str(
                    error
                ):
                    raise
                self._probes[key] = False
        return self._probes[key]

    def plan(self, database: str, table: str, use_final: bool | None, source: str = "") -> ReadPlan:
        """The table's engine and FINAL decision; raises before any data is read."""
        info = self.table(database, table)
        decision = decide(
            info.engine,
            use_final,
            probe=lambda: self.final_supported(database, table),
            source=source or f"{database}.{table}",
        )
        return ReadPlan(info, decision)

    def stream(
        self, plan: ReadPlan, settings: dict[str, Any] | None = None
    ) -> pa.RecordBatchReader:
        """The plan's rows as an Arrow stream: batches arrive as ClickHouse sends them."""
        check_loadable(plan)
        logger.info(
            "reading %s.%s (FINAL=%s)",
            plan.table.database,
            plan.table.table,
            plan.decision.use_final,
        )
        context = self.client.query_arrow_stream(
            plan.query, parameters=plan.parameters, settings=settings
        )
        stream = context.__enter__()
        batches = iter(stream)
        try:
            first = next(batches)
        except StopIteration:
            context.__exit__(None, None, None)
            schema = self.client.query_arrow(
                plan.query + " LIMIT 0", parameters=plan.parameters
            ).schema
            return pa.RecordBatchReader.from_batches(schema, iter(()))
        except BaseException:
            context.__exit__(None, None, None)
            raise
        return pa.RecordBatchReader.from_batches(first.schema, _chain(first, batches, context))


def check_loadable(plan: ReadPlan) -> None:
    """Raise if the plan's table cannot be read as a whole (a parameterized view)."""
    if plan.table.engine.family is Family.PARAMETERIZED_VIEW:
        raise ValueError(
            f"{plan.table.database}.{plan.table.table} is a parameterized view: "
            "it needs arguments and cannot be loaded as a source"
        )


def _chain(first: pa.RecordBatch, rest: Iterator[pa.RecordBatch], context: Any) -> Iterator:
    try:
        yield first
        yield from rest
    finally:
        context.__exit__(None, None, None)
