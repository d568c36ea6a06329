"""FINAL overhead per engine, and the DuckDB plugin's load throughput, on embedded ClickHouse.

Run: `python benchmarks/clickhouse_bench.py [--rows 4000000] [--repeat 3]`. Every table gets
the same rows in several INSERTs whose keys overlap (so unmerged parts exist and FINAL has
work), with merges stopped. Times are medians of `--repeat` full reads as Arrow batches.
"""

from __future__ import annotations

import argparse
import platform
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone

import clickhouse_connect
import duckdb
from dbt.adapters.duckdb.utils import SourceConfig
from dbt_merge.clickhouse.client import SELECT_QUERY
from dbt_merge.duckdb.plugin import Plugin

ENGINES = {
    "ReplacingMergeTree": (
        "(k UInt64, v String, ver UInt32) ENGINE = ReplacingMergeTree(ver) ORDER BY k",
        "number % {keys}, toString(number), {part}",
    ),
    "CollapsingMergeTree": (
        "(k UInt64, v String, sign Int8) ENGINE = CollapsingMergeTree(sign) ORDER BY k",
        "number % {keys}, toString(number), 1",
    ),
    "VersionedCollapsingMergeTree": (
        "(k UInt64, v String, sign Int8, ver UInt32)"
        " ENGINE = VersionedCollapsingMergeTree(sign, ver) ORDER BY k",
        "number % {keys}, toString(number), 1, {part}",
    ),
    "CoalescingMergeTree": (
        "(k UInt64, v Nullable(String), w Nullable(UInt32)) ENGINE = CoalescingMergeTree"
        " ORDER BY k",
        "number % {keys}, if(number % 2 = 0, toString(number), NULL), {part}",
    ),
    "SummingMergeTree": (
        "(k UInt64, v UInt64, w UInt64) ENGINE = SummingMergeTree ORDER BY k",
        "number % {keys}, number, 1",
    ),
    "AggregatingMergeTree": (
        "(k UInt64, v SimpleAggregateFunction(max, UInt64),"
        " w SimpleAggregateFunction(sum, UInt64)) ENGINE = AggregatingMergeTree ORDER BY k",
        "number % {keys}, number, 1",
    ),
}


def _median_seconds(run: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _drain(client, table: str, final: bool) -> int:
    sql = SELECT_QUERY + (" FINAL" if final else "")
    rows = 0
    with client.query_arrow_stream(sql, parameters={"database": "bench", "table": table}) as s:
        for batch in s:
            rows += batch.num_rows
    return rows


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _table(headers: list[str], rows: list[list[object]]) -> str:
    cells = [headers] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [
        "  ".join(
            c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=4_000_000, help="rows per table")
    parser.add_argument("--parts", type=int, default=4, help="INSERTs (parts) per table")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    folder = tempfile.mkdtemp(prefix="dbt_merge_bench_")
    dsn = f"chdb://{folder}"
    client = clickhouse_connect.get_client(dsn=dsn)
    client.command("CREATE DATABASE bench")
    per_part, keys = args.rows // args.parts, args.rows // 2
    start = time.perf_counter()
    for name, (body, _) in ENGINES.items():
        client.command(f"CREATE TABLE bench.{name} {body}")
    # Stops merges of the tables that exist now (not of tables created later).
    client.command("SYSTEM STOP MERGES")
    for name, (_, values) in ENGINES.items():
        for part in range(args.parts):
            select = values.format(keys=keys, part=part + 1)
            client.command(
                f"INSERT INTO bench.{name} SELECT {select}"
                f" FROM numbers({part * per_part}, {per_part})"
            )
    print(
        f"setup: {args.rows:,} rows x {len(ENGINES)} tables in {args.parts} parts each, "
        f"{time.perf_counter() - start:.1f}s"
    )

    overhead = []
    for name in ENGINES:
        plain, n_plain = _median_seconds(lambda n=name: _drain(client, n, False), args.repeat)
        final, n_final = _median_seconds(lambda n=name: _drain(client, n, True), args.repeat)
        overhead.append(
            [
                name,
                f"{n_plain:,}",
                f"{plain:.2f}",
                f"{n_final:,}",
                f"{final:.2f}",
                f"{final / plain:.1f}x",
            ]
        )
    print("\nFINAL overhead (full read as Arrow batches, median of", args.repeat, "runs)")
    print(
        _table(
            ["engine", "rows plain", "plain s", "rows FINAL", "FINAL s", "FINAL/plain"], overhead
        )
    )

    table = "ReplacingMergeTree"
    plugin = Plugin.create("dbt_merge.duckdb.plugin", alias="clickhouse", config={"dsn": dsn})
    source = SourceConfig(
        name=table,
        identifier=table,
        schema="bench",
        database=None,
        meta={"plugin": "clickhouse"},
        tags=[],
    )
    con = duckdb.connect()

    def plugin_to_duckdb() -> int:
        reader = plugin.load(source)
        con.register("src", reader)
        con.execute("CREATE OR REPLACE TABLE t AS SELECT * FROM src")
        con.unregister("src")
        return con.execute("SELECT count(*) FROM t").fetchall()[0][0]

    def plugin_drain() -> int:
        return sum(b.num_rows for b in plugin.load(source))

    sql = SELECT_QUERY + " FINAL"
    params = {"database": "bench", "table": table}

    def bare_query_arrow() -> int:
        return client.query_arrow(sql, parameters=params).num_rows

    results = []
    for label, run in (
        ("plugin load -> Arrow stream (drained)", plugin_drain),
        ("plugin load -> DuckDB CREATE TABLE", plugin_to_duckdb),
        ("bare clickhouse-connect query_arrow", bare_query_arrow),
    ):
        before = _max_rss_mb()
        seconds, rows = _median_seconds(run, args.repeat)
        grew = _max_rss_mb() - before
        results.append(
            [label, f"{rows:,}", f"{seconds:.2f}", f"{rows / seconds / 1e6:.2f}", f"{grew:.0f}"]
        )
    print(
        f"\nLoad throughput, {table} with FINAL (median of {args.repeat} runs; peak RSS growth"
        " is cumulative, in run order)"
    )
    print(_table(["path", "rows", "seconds", "M rows/s", "peak RSS +MB"], results))
    version = client.query("SELECT version()").result_rows[0][0]
    print(
        f"\n{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, ClickHouse {version} (chdb), "
        f"clickhouse-connect {clickhouse_connect.__version__}, duckdb {duckdb.__version__}, "
        f"Python {platform.python_version()}, {platform.machine()}, "
        f"{__import__('os').cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
