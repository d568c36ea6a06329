"""One embedded ClickHouse (chdb) per test process, with a table of every engine, unmerged.

chdb allows one data folder per process (a second folder raises "EmbeddedServer already
initialized"), so every ClickHouse test shares the folder created here. Opening the same
folder again from another client works and shares the data.
"""

from __future__ import annotations

import os

import pytest
from ch_data import CHDB_CONFIG, populate


@pytest.fixture(scope="session")
def ch(state_dir):
    """A client on the process's embedded ClickHouse, every engine created and filled.

    The engine takes its options from the client that opens it and shuts down when the last
    client closes; this client stays open for the session so the engine keeps its cluster.
    """
    import clickhouse_connect

    folder = state_dir / "chdb"
    folder.mkdir()
    (folder / "config.xml").write_text(CHDB_CONFIG)
    dsn = f"chdb://{folder / 'data'}"
    os.environ["CLICKHOUSE_DSN"] = dsn
    os.environ["CLICKHOUSE_CHDB_CONFIG"] = str(folder / "config.xml")
    client = clickhouse_connect.get_client(
        dsn=dsn, chdb_options={"config-file": str(folder / "config.xml")}
    )
    populate(client)
    yield client
    client.close()


@pytest.fixture(scope="session")
def chdb_dsn(ch) -> str:
    """The `chdb://` DSN of the embedded engine (also exported as CLICKHOUSE_DSN)."""
    return os.environ["CLICKHOUSE_DSN"]
