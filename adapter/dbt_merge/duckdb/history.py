"""Create a DuckDB `merge_history_table` on first use, once, whatever dbt's --threads.

dbt-duckdb runs each model in its own transaction on one database. Two transactions that both
create the same table fail with `Catalog write-write conflict`, so the history table cannot be
created inside the merges that share it. The materialization (prepare_merge_history) creates it
before its own transaction begins, through a dbt-duckdb Python job: on a cursor of its own
(committed at once), one thread at a time.
"""

from __future__ import annotations

import threading
from typing import Any

_LOCK = threading.Lock()


def create_table(cursor: Any, create_sql: str, alter_sql: str | None = None) -> None:
    """Run `create_sql` (CREATE TABLE IF NOT EXISTS), then `alter_sql` if given (the column a
    history merge adds to a table made before it had one), on `cursor`, a connection of its
    own, serialized with every other thread of this process."""
    with _LOCK:
        cursor.execute(create_sql)
        if alter_sql:
            cursor.execute(alter_sql)
