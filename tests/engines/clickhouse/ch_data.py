"""The embedded ClickHouse test data: a table of every engine, and row helpers."""

from __future__ import annotations

from pathlib import Path

PROJECT = Path(__file__).parent / "project"

DATABASES = ("ch_a", "ch_b")

# Declares a one-shard cluster on this process's own (never opened) TCP port, so a Distributed
# table's shard is local and the embedded engine can query it.
CHDB_CONFIG = """<clickhouse>
  <tcp_port>9000</tcp_port>
  <remote_servers>
    <one_shard><shard><replica><host>localhost</host><port>9000</port></replica></shard></one_shard>
  </remote_servers>
</clickhouse>
"""

TABLES = {
    "mt": "(k UInt32, v String) ENGINE = MergeTree ORDER BY k",
    "rmt": "(k UInt32, v String, ver UInt32, is_deleted UInt8)"
    " ENGINE = ReplacingMergeTree(ver, is_deleted) ORDER BY k",
    "cmt": "(k UInt32, v String, sign Int8) ENGINE = CollapsingMergeTree(sign) ORDER BY k",
    "vcmt": "(k UInt32, v String, sign Int8, ver UInt32)"
    " ENGINE = VersionedCollapsingMergeTree(sign, ver) ORDER BY k",
    "coal": "(k UInt32, a Nullable(String), b Nullable(UInt32))"
    " ENGINE = CoalescingMergeTree ORDER BY k",
    "smt": "(k UInt32, a UInt64, b UInt64) ENGINE = SummingMergeTree((a, b)) ORDER BY k",
    "amt": "(k UInt32, total SimpleAggregateFunction(sum, UInt64),"
    " top SimpleAggregateFunction(max, UInt32)) ENGINE = AggregatingMergeTree ORDER BY k",
    "logt": "(k UInt32, v String) ENGINE = Log",
}
VIEWS = {
    "vw": "CREATE VIEW {db}.vw AS SELECT k, v, ver FROM {db}.rmt",
    "dist": "CREATE TABLE {db}.dist AS {db}.rmt ENGINE = Distributed('one_shard', '{db}', 'rmt')",
    "mv": "CREATE MATERIALIZED VIEW {db}.mv ENGINE = ReplacingMergeTree(ver) ORDER BY k"
    " AS SELECT k, v, ver FROM {db}.rmt",
    "pvw": "CREATE VIEW {db}.pvw AS SELECT * FROM {db}.rmt WHERE k > {{min_k:UInt32}}",
}
# Versions of the same keys in separate INSERTs: each INSERT is its own part.
INSERTS = {
    "mt": ["(1, 'a'), (2, 'b')", "(1, 'a')"],
    "rmt": ["(1, 'a', 1, 0), (2, 'b', 1, 0), (3, 'c', 1, 0)", "(1, 'a2', 2, 0), (3, 'c', 2, 1)"],
    "cmt": ["(1, 'a', 1), (2, 'b', 1)", "(1, 'a', -1), (1, 'a2', 1)"],
    "vcmt": ["(1, 'a', 1, 1), (2, 'b', 1, 1)", "(1, 'a', -1, 1), (1, 'a2', 1, 2)"],
    "coal": ["(1, 'x', NULL), (2, NULL, 5)", "(1, NULL, 7)"],
    "smt": ["(1, 1, 10), (2, 2, 20)", "(1, 3, 30)"],
    "amt": ["(1, 1, 5), (2, 2, 1)", "(1, 3, 2)"],
    "logt": ["(1, 'a')", "(1, 'a')"],
}


def project_args(target: str, folder: Path | None = None) -> list[str]:
    """dbt/dbt-merge arguments for the test project; dbt's outputs go to `folder`."""
    args = ["--project-dir", str(PROJECT), "--profiles-dir", str(PROJECT), "--target", target]
    if folder is not None:
        args += ["--target-path", str(folder / "target"), "--log-path", str(folder / "logs")]
    return args


def populate(client) -> None:
    """Create every test table in each database, stop merges, then INSERT each version apart."""
    for db in DATABASES:
        client.command(f"CREATE DATABASE {db}")
        for name, body in TABLES.items():
            client.command(f"CREATE TABLE {db}.{name} {body}")
        for statement in VIEWS.values():
            client.command(statement.format(db=db))
    client.command("SYSTEM STOP MERGES")
    for db in DATABASES:
        for name, batches in INSERTS.items():
            for values in batches:
                client.command(f"INSERT INTO {db}.{name} VALUES {values}")


def rows(values) -> list[tuple]:
    """Rows as sortable tuples of plain Python values (Decimal/int and NULLs compared stably)."""
    out = [
        tuple(
            int(v) if hasattr(v, "as_integer_ratio") and not isinstance(v, float) else v
            for v in row
        )
        for row in values
    ]
    return sorted(out, key=repr)


def clickhouse_rows(client, db: str, table: str, final: bool) -> list[tuple]:
    """What ClickHouse returns for the table, with or without FINAL."""
    sql = "SELECT * FROM {db:Identifier}.{t:Identifier}" + (" FINAL" if final else "")
    return rows(client.query(sql, parameters={"db": db, "t": table}).result_rows)


def arrow_rows(table) -> list[tuple]:
    """An Arrow table's rows as sorted tuples."""
    return rows(zip(*(column.to_pylist() for column in table.columns), strict=True))


# What the test project's sources must read: (source, schema, table) -> FINAL used.
DEFAULT_FINAL = {
    "mt": False,
    "rmt": True,
    "cmt": True,
    "vcmt": True,
    "coal": True,
    "smt": False,
    "amt": False,
    "logt": False,
    "mv": True,
    "vw": False,
    "dist": True,
}
RAW_SOURCE_FINAL = {
    "mt": False,
    "rmt": False,
    "cmt": True,
    "vcmt": True,
    "coal": False,
    "smt": True,
    "amt": False,
}
PROJECT_SOURCES = [("ch", "ch_a", t, f) for t, f in DEFAULT_FINAL.items()] + [
    ("ch_raw", "ch_b", t, f) for t, f in RAW_SOURCE_FINAL.items()
]
# Tables where FINAL changes the result (so a test would fail if FINAL were ignored).
FINAL_MATTERS = {"rmt", "cmt", "vcmt", "coal", "smt", "amt", "mv", "dist"}


if __name__ == "__main__":
    # Build the test data in a folder, for trying the CLI by hand:
    #   python tests/engines/clickhouse/ch_data.py /tmp/ch_demo
    #   then export the two variables it prints.
    import sys

    import clickhouse_connect

    folder = Path(sys.argv[1])
    folder.mkdir(parents=True)
    (folder / "config.xml").write_text(CHDB_CONFIG)
    populate(
        clickhouse_connect.get_client(
            dsn=f"chdb://{folder / 'data'}",
            chdb_options={"config-file": str(folder / "config.xml")},
        )
    )
    print(f"export CLICKHOUSE_DSN=chdb://{folder / 'data'}")
    print(f"export CLICKHOUSE_CHDB_CONFIG={folder / 'config.xml'}")
