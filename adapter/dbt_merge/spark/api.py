"""merge_dataframe: merge a Spark DataFrame into a table, from a PySpark job.

The door is thin: the options are read and checked by the package's macros
(validate_merge_config), and the merge is the materialization's own flow
(macros/flow/run_merge.sql), rendered in the stand-in context (dbt_merge.render) with
`spark__` macros first, on the DataFrame's own SparkSession. What dbt would give the flow
(the target relation, its columns, a statement runner, table creation) comes from
dbt_merge.spark.session.
"""

from __future__ import annotations

import datetime
import re
import uuid
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from dbt_merge.errors import MergeError
from dbt_merge.options import MergeOptions, merge_config
from dbt_merge.render import MacroContext, door_context, source_wording
from dbt_merge.result import MergeResult
from dbt_merge.spark.session import Column, Relation, SparkRunner, literal, quote
from dbt_merge.spark.target import resolve_target
from dbt_merge.spark.views import refuse_stale_views

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+; the annotations are never evaluated
    from typing import Unpack


def merge_dataframe(
    df: Any,
    target: str,
    key_columns: str | Sequence[str],
    strategy: str = "upsert",
    **options: Unpack[MergeOptions],
) -> MergeResult:
    """Merge the rows of `df` into the table `target` ("database.table" or "table", as Spark
    SQL names it: a part that is not letters, digits and _ in backticks) of the DataFrame's
    SparkSession, and return what the merge did.

    key_columns: the key, a column name or a list (dbt's `unique_key`); strategy: upsert,
    insert, update, full_merge or deduplicate. Every other option is the dbt config option of
    the same name, with the same meaning (see the README's options table); file_format,
    partition_by, tblproperties and options apply to a table the call creates (first merge, or
    full_refresh=True); an existing table keeps its own format.

    The target is a table of the session catalog, or nothing yet (the call creates it in an
    existing database); a view, a temporary view (also one that shadows a table of the same
    one-part name), a table of another catalog and a missing database are refused. `df` is read
    once: the rows checked are the rows written, whatever else writes its inputs meanwhile.

    Runs in the user's session with its settings (ANSI mode, time zone, catalog) and leaves it as
    it was: every setting the merge sets is put back, `df` and its cache are untouched, and no
    temporary view, cached relation or work table is left, also when the merge fails. Raises
    MergeError, with the target unchanged, on bad options or source rows. An Iceberg table gets
    one commit, whose id is the result's snapshot_id.
    """
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException

    spark = df.sparkSession
    resolved = resolve_target(spark, target)
    this, existing = resolved.relation, resolved.existing
    prefix = f"dbt_merge: table '{resolved.name}': "

    def fail(message: str) -> None:
        raise MergeError(prefix + source_wording(message, "the DataFrame"))

    config = merge_config(key_columns, strategy, options, fail=fail)
    full_refresh = bool(options.get("full_refresh"))

    invocation = str(uuid.uuid4())
    # when the call began: a snapshot made current then or before was there before it
    # (spark_commit_lost). The driver's clock, which also stamps the call's own commit (Iceberg
    # commits from the driver JVM, on this host); a margin of a second here missed every loss
    # on a table last written less than a second before the call (red team of 2026-11-29)
    started_ms = int(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000)
    runner = SparkRunner(spark)
    macros = MacroContext(
        config,
        runner.query,
        fail,
        model_name=resolved.name,
        engine="spark",
        error=MergeError,
        run_statement=runner.statement,
        context=door_context(
            this=this,
            model={"name": resolved.name, "unique_id": f"merge_dataframe.{resolved.name}"},
            invocation_id=invocation,
            full_refresh=full_refresh,
            relation=Relation,
            column=Column,
            load_cached_relation=lambda relation: (
                existing if relation == this else runner.load_relation(relation)
            ),
            make_temp_relation=lambda base, suffix: Relation(
                None, base.identifier + suffix, "view"
            ),
            run_started_at=datetime.datetime.now(datetime.timezone.utc),
            create_table_as=lambda temporary, relation, sql: _create_table_as(
                config, relation, sql, df.columns, fail
            ),
            # the run's Iceberg branch made and published in-process (merge_on_branch); its
            # MERGE's commit carries the call's mark (marking_commits), which the flow checks
            dbt_merge_branches=SimpleNamespace(run=runner.branch, mark_key=COMMIT_MARK,
                                               mark=invocation),
        ),
        adapter_methods={
            "get_columns_in_relation": runner.get_columns,
            "drop_relation": runner.drop_relation,
            "commit": lambda: None,
        },
    )
    failed = True
    try:
        cfg = macros.validate_merge_config()
        rebuild = existing is None or bool(full_refresh)
        refuse_stale_views(df, macros)
        select = runner.register_source(df, "__dbt_merge_df_" + invocation.replace("-", ""))
        with runner.marking_commits(COMMIT_MARK, invocation):
            try:
                stats = macros.run_merge(cfg, this, existing, rebuild, select)
            except (CapturedException, Py4JJavaError) as error:
                # a check that rides inside a statement fails it with the package's message
                # (raise_error: a repeated key, another writer's commit): the door's error; a
                # failure inside a Spark job reaches Python unconverted (Py4JJavaError)
                if "Cannot write to both branch and WAP branch" in str(error):
                    # another thread of the session set spark.wap.branch while the run wrote
                    # its own branch (write.wap.enabled): the MERGE failed, nothing published
                    raise MergeError(
                        prefix + f"the session set spark.wap.branch while this call wrote its own "
                        f"branch of {this} (the table has write.wap.enabled, and Iceberg writes "
                        "no other branch then), so nothing was published: the table is as it was. "
                        "Set spark.wap.branch before the call (the merge then writes that branch) "
                        "or not at all, then merge again."
                    ) from None
                if rebuild and _created_meanwhile(str(error)):
                    # a first build creates, never replaces (spark__rebuild_target): another
                    # writer made the table after this call found none (or dropped the old one)
                    raise MergeError(prefix + _created_meanwhile_message(
                        this, config.get("file_format"), existing is not None)) from None
                raised = _raised_message(str(error), resolved.name)
                if (raised is None and _refused_commit(str(error))
                        and not (runner.marks_commits() and runner.marked_snapshot(
                            this, COMMIT_MARK, invocation, reload=True) is not None)):
                    # Iceberg refused the write's commit for another writer's conflicting
                    # one, and no commit of this call is in the table (the refused statement
                    # was its only write there)
                    raise MergeError(prefix + _refused_commit_message(
                        this, str(error), config.get("on_schema_change"))) from None
                if raised is None:
                    raise
                raise MergeError(prefix + source_wording(raised, "the DataFrame")) from None
        snapshot = None
        if "snapshot_id" in stats:
            # the write-once path names the snapshot it published (none: nothing changed)
            published = stats.pop("snapshot_id")
            snapshot = int(published) if published not in (None, "") else None
        elif not stats.get("dry_run") and not stats.get("skipped"):
            snapshot = runner.marked_snapshot(this, COMMIT_MARK, invocation)
            wrote = any(stats.get(k) for k in ("inserted", "updated", "deleted"))
            if snapshot is None and wrote and not rebuild and runner.marks_commits():
                # the session's cached table may predate the commit: read it again, reloaded
                snapshot = runner.marked_snapshot(this, COMMIT_MARK, invocation, reload=True)
                # a commit Spark reported done that is not in the table's history, whose older
                # snapshots are all there (none expired meanwhile) and nothing staged (WAP):
                # refused, not reported
                if snapshot is None and runner.commit_lost(this, started_ms):
                    raise MergeError(prefix + _lost_commit_message(this, invocation))
        failed = False
        return MergeResult.from_stats(stats, snapshot)
    finally:
        runner.close(failed)


#: what Iceberg says when it refuses a commit because another writer's commit conflicts with
#: it (a ValidationException at commit time: nothing of the statement is committed)
_REFUSED_COMMIT = ("Found conflicting files", "Found conflicting deleted files",
                   "Found new conflicting delete files", "Found concurrently deleted",
                   # files the write replaces that a compaction (rewrite_data_files) replaced
                   "Missing required files to delete",
                   # the snapshot the write started from expired meanwhile
                   "Cannot determine history between",
                   "Runtime file filtering is not possible: the table has been concurrently "
                   "modified")


def _refused_commit(text: str) -> bool:
    """Iceberg refused the statement's commit for another writer's conflicting commit: its
    ValidationException (or, on a session shared by threads, the IllegalStateException of a
    table modified while the statement ran), never a CommitStateUnknownException."""
    if "CommitStateUnknownException" in text:
        return False
    return any(said in text for said in _REFUSED_COMMIT) and (
        "ValidationException" in text or "IllegalStateException" in text)


def _refused_commit_message(this: Relation, text: str, on_schema_change: str | None) -> str:
    """What a call whose write Iceberg refused says (errors.md concurrent_validation), with
    Iceberg's sentence (up to the list of files). A column change on_schema_change made before
    the write is a commit of its own, not undone (red team helper-41)."""
    said = next((line for line in text.splitlines()
                 if any(phrase in line for phrase in _REFUSED_COMMIT)), "")
    said = said.split(": [", 1)[0].split("Exception: ", 1)[-1].strip()[:300]
    changes_columns = on_schema_change in ("append_new_columns", "sync_all_columns")
    left = ("none of the call's rows were written (a column change on_schema_change='"
            f"{on_schema_change}' made before the write, if it made one, stays in the table: "
            "it is not undone)"
            if changes_columns else
            "nothing was written: the table is as the other writer left it")
    return (
        f"another writer committed to {this} while this call's write ran, and Iceberg refused "
        f"the call's commit ({said}), so {left}. Merging again is safe: the call counts the "
        "table as it is then."
    )


def _lost_commit_message(this: Relation, invocation: str) -> str:
    """What a call whose write Spark reported done, but whose commit the table's history does not
    hold, says (errors.md spark_commit_lost)."""
    return (
        f"this call's write into {this} finished, but its commit is not in the table's history "
        f"(no snapshot carries {COMMIT_MARK}={invocation}, also after reloading the table): the "
        "catalog lost it, or another job rolled it back and expired it. A catalog without atomic "
        "commits loses a commit when two land at the same instant, such as a Hive metastore "
        "with iceberg.engine.hive.lock-enabled=false. "
        "Nothing of this call is in the table, and its counts are not reported (a "
        "merge_history_table row it appended describes the lost write). Merge again; for "
        "concurrent writers, use a catalog whose commits are atomic (Hive locks on, or a "
        "hadoop, JDBC, REST or Glue catalog)."
    )


def _created_meanwhile_message(this: Relation, file_format: str | None, dropped: bool) -> str:
    """What a first build's CREATE that found the table made by another writer means. Iceberg
    and Delta commit a new table atomically: nothing of this call is in it. Spark writes a
    parquet (orc, ...) table's files into its location before it registers the table: the
    files of a CREATE that lost may be in the other writer's table (docs/spark.md)."""
    when = ("after this call dropped the old relation for its full refresh (its rows are gone, as "
            "the full refresh meant)" if dropped else "after this call found no table there")
    if (file_format or "parquet").lower() in ("iceberg", "delta"):
        return (f"another writer created {this} while this call was building it ({when}), so "
                "this call wrote nothing: that table and its rows are as the other writer left "
                "them. Merge again: the call then merges into that table "
                "(errors.md#spark_created_meanwhile).")
    return (f"another writer created {this} while this call was building it ({when}). Spark "
            f"writes a {file_format or 'parquet'} table's files before it registers the table, "
            "so the table may now hold this call's rows besides the other writer's (a key twice:"
            " the next merge refuses it). Check the table, or rebuild it with full_refresh=True"
            "; such a table takes one writer at a time (errors.md#spark_created_meanwhile).")


def _created_meanwhile(text: str) -> bool:
    """Whether a CREATE failed because the table exists: Spark's analysis error, or Iceberg's
    AlreadyExistsException at the commit of a table created at the same moment."""
    return ("TABLE_OR_VIEW_ALREADY_EXISTS" in text or "TableAlreadyExistsException" in text
            or "AlreadyExistsException: Table already exists" in text)


def _raised_message(text: str, name: str) -> str | None:
    """The package's own message in a Spark error a statement's raise_error gave
    ('dbt_merge: model '<name>': <message>' up to its end), or None."""
    head = f"dbt_merge: model '{name}': "
    start = text.find(head)
    # a statement that failed before running (an AnalysisException) quotes its SQL and plan,
    # where the message is the argument of raise_error( : that is not the message raised
    while start >= 0 and text[max(0, start - 13):start].rstrip("'").endswith("raise_error("):
        start = text.find(head, start + 1)
    if start < 0:
        return None
    message = text[start + len(head):]
    end = message.find("The target was not changed.")
    if end >= 0:
        return message[: end + len("The target was not changed.")]
    return message.splitlines()[0].strip()


#: the snapshot summary key that marks the commits of one merge_dataframe call (its value: the
#: call's invocation id), so that MergeResult.snapshot_id is the call's own commit
COMMIT_MARK = "dbt_merge.invocation"


def _create_table_as(config: dict[str, Any], relation: Relation, sql: str,
                     columns: Sequence[str], fail) -> str:
    """dbt-spark's create_table_as for a table the merge creates, always with a USING clause
    (no Hive text table by default). Option and property values are SQL string literals, the
    partition columns quoted identifiers, whatever they hold; on Iceberg a partition_by entry
    that is no column of the DataFrame and reads as a transform (`bucket(4, id)`, `days(ts)`)
    is that transform of the quoted column."""
    file_format = config.get("file_format") or "parquet"
    head = "create or replace table" if file_format in ("iceberg", "delta") else "create table"
    parts = [f"{head} {relation} using {file_format}"]
    if config.get("options"):
        parts.append(
            "options ("
            + ", ".join(f"{literal(k)} = {literal(v)}" for k, v in config["options"].items())
            + ")"
        )
    if config.get("tblproperties"):
        parts.append(
            "tblproperties ("
            + ", ".join(f"{literal(k)} = {literal(v)}" for k, v in config["tblproperties"].items())
            + ")"
        )
    partition_by = config.get("partition_by")
    if partition_by:
        terms = [partition_by] if isinstance(partition_by, str) else list(partition_by)
        parts.append("partitioned by (" + ", ".join(
            _partition_term(str(t), columns, file_format, fail) for t in terms) + ")")
    return "\n".join(parts) + "\nas\n" + sql


#: Iceberg's partition transforms, as Spark SQL writes them: a name, then literals and a column
_TRANSFORM = re.compile(r"\s*(bucket|truncate|years|months|days|hours|year|month|day|hour)"
                        r"\s*\((.*)\)\s*", re.IGNORECASE)


def _partition_term(term: str, columns: Sequence[str], file_format: str, fail) -> str:
    """One partition_by entry as SQL: a column of the DataFrame (quoted), or on Iceberg a
    transform of one (its integer arguments as they are, the column quoted)."""
    found = _TRANSFORM.fullmatch(term)
    if found is None or any(term.lower() == str(c).lower() for c in columns):
        return quote(term)
    if file_format.lower() != "iceberg":
        fail(f"partition_by '{term}' is an Iceberg partition transform, but file_format is "
             f"'{file_format}', whose tables are partitioned by columns only. Partition by a "
             "column, or set file_format='iceberg'. The target was not changed.")
    arguments = [a.strip() for a in found.group(2).split(",")]
    rendered = [a if re.fullmatch(r"[0-9]+", a) else quote(a.strip("`")) for a in arguments]
    return f"{found.group(1).lower()}({', '.join(rendered)})"
