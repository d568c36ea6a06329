"""merge_dataframe: merge a Spark DataFrame into a table, from a PySpark job.

The door is thin: the options are read and checked by the package's macros
(validate_merge_config), and the merge is the materialization's own flow
(macros/flow/run_merge.sql), rendered in the stand-in context (dbt_merge.render) with
`spark__` macros first, on the DataFrame's own SparkSession. What dbt would give the flow
(the target relation, its columns, a statement runner, table creation) comes from
dbt_merge.spark.session.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from dbt_merge.errors import MergeError
from dbt_merge.options import MergeOptions, merge_config
from dbt_merge.render import MacroContext, source_wording
from dbt_merge.result import MergeResult
from dbt_merge.spark.session import Column, Relation, SparkRunner

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+; the annotations are never evaluated
    from typing import Unpack


def merge_dataframe(
    df: Any,
    target: str,
    key_columns: str | Sequence[str],
    strategy: str = "upsert",
    **options: Unpack[MergeOptions],
) -> MergeResult:
    """Merge the rows of `df` into the table `target` ("schema.table" or "table") of the
    DataFrame's SparkSession, and return what the merge did.

    key_columns: the key, a column name or a list (dbt's `unique_key`); strategy: upsert,
    insert, update, full_merge or deduplicate. Every other option is the dbt config option of
    the same name, with the same meaning (see the README's options table); file_format,
    partition_by, tblproperties and options apply to a table the call creates (first merge, or
    full_refresh=True); an existing table keeps its own format.

    Runs in the user's session with its settings (ANSI mode, time zone, catalog) and leaves it as
    it was: every setting the merge sets is put back, and no temporary view, cached relation or
    work table is left, also when the merge fails. Raises MergeError, with the target unchanged,
    on bad options or source rows. An Iceberg table gets one commit.
    """
    spark = df.sparkSession
    this = _target_relation(spark, target)
    prefix = f"dbt_merge: table '{this}': "

    def fail(message: str) -> None:
        raise MergeError(prefix + source_wording(message, "the DataFrame"))

    config = merge_config(key_columns, strategy, options, fail=fail)
    full_refresh = bool(options.get("full_refresh"))

    invocation = str(uuid.uuid4())
    source = "__dbt_merge_df_" + invocation.replace("-", "")
    runner = SparkRunner(spark)
    macros = MacroContext(
        config,
        runner.query,
        fail,
        model_name=str(this),
        engine="spark",
        error=MergeError,
        run_statement=runner.statement,
        context={
            "this": this,
            "model": {"name": str(this), "unique_id": f"merge_dataframe.{this}"},
            "invocation_id": invocation,
            "invocation_args_dict": {},
            "local_md5": lambda text: hashlib.md5(str(text).encode()).hexdigest(),
            "load_cached_relation": runner.load_relation,
            "make_temp_relation": lambda base, suffix: Relation(
                None, base.identifier + suffix, "view"
            ),
            "should_full_refresh": lambda: bool(full_refresh),
            # relation_columns builds dbt Columns through dbt's api namespace
            "api": SimpleNamespace(Column=SimpleNamespace(create=Column)),
            "create_table_as": lambda temporary, relation, sql: _create_table_as(
                config, relation, sql
            ),
        },
        adapter_methods={
            "get_columns_in_relation": runner.get_columns,
            "drop_relation": runner.drop_relation,
            "commit": lambda: None,
        },
    )
    failed = True
    try:
        cfg = macros.validate_merge_config()
        existing = runner.load_relation(this)
        table = this.incorporate(type="table")
        rebuild = existing is None or existing.is_view or bool(full_refresh)
        before = None if rebuild else runner.current_snapshot(existing)
        df.createOrReplaceTempView(source)
        stats = macros.run_merge(cfg, table, existing, rebuild, f"select * from {source}")
        snapshot = None
        if not stats.get("dry_run") and not stats.get("skipped"):
            snapshot = runner.current_snapshot(table)
        failed = False
        return MergeResult.from_stats(stats, None if snapshot == before else snapshot)
    finally:
        spark.catalog.dropTempView(source)
        runner.close(failed)


def _target_relation(spark, target: str) -> Relation:
    parts = [p.strip("` ") for p in str(target).split(".")]
    if len(parts) > 2 or not all(parts):
        raise MergeError(
            f"dbt_merge: table '{target}': the target must be 'schema.table' or 'table' (a table "
            "of the session's catalog)."
        )
    schema = parts[0] if len(parts) == 2 else spark.catalog.currentDatabase()
    return Relation(schema, parts[-1], "table")


def _create_table_as(config: dict[str, Any], relation: Relation, sql: str) -> str:
    """dbt-spark's create_table_as for a table the merge creates, always with a USING clause
    (no Hive text table by default)."""
    file_format = config.get("file_format") or "parquet"
    head = "create or replace table" if file_format in ("iceberg", "delta") else "create table"
    parts = [f"{head} {relation} using {file_format}"]
    if config.get("options"):
        parts.append(
            "options (" + ", ".join(f'{k} "{v}"' for k, v in config["options"].items()) + ")"
        )
    if config.get("tblproperties"):
        parts.append(
            "tblproperties ("
            + ", ".join(f"'{k}' = '{v}'" for k, v in config["tblproperties"].items())
            + ")"
        )
    partition_by = config.get("partition_by")
    if partition_by:
        columns = [partition_by] if isinstance(partition_by, str) else list(partition_by)
        parts.append("partitioned by (" + ", ".join(columns) + ")")
    return "\n".join(parts) + "\nas\n" + sql
