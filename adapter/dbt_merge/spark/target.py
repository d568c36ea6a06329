"""The target of a merge into Spark, resolved once, the engine's way.

`resolve_target(spark, name)` parses the name with the session's own SQL parser (Spark's
multipart identifiers: backticks quote a part, a dot inside backticks is part of the name) and
looks the object up in the session's catalog, with Spark's own resolution rules (a one-part name
is a temporary view first). It returns the table to merge into and what is there now, or refuses,
before anything runs, anything the merge cannot write: a view, a temporary view (a one-part name
that a temporary view of the session shadows included), a global temporary view, a table of
another catalog than the session catalog, a database that does not exist, a name the catalog
cannot store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dbt_merge.errors import MergeError
from dbt_merge.spark.session import Relation, listed, quote

#: the session catalog, the only one the merge writes (its tables are dbt-spark's relations)
SESSION_CATALOG = "spark_catalog"
#: the names a Hive metastore stores (org.apache.hadoop.hive.metastore.MetaStoreUtils.validateName)
_HIVE_NAME = re.compile(r"[A-Za-z0-9_]+")
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Target:
    """The table a merge writes: `relation` (schema and identifier, as the catalog spells them
    when the table exists) and `existing` (the same relation, or None when there is no table
    yet). `name` is how messages name it."""

    relation: Relation
    existing: Relation | None
    name: str


def display_name(parts: list[str]) -> str:
    """`db.t`, each part in backticks only where Spark needs them."""
    return ".".join(p if _PLAIN.fullmatch(p) else quote(p) for p in parts)


def parse_name(spark, name: str) -> list[str]:
    """The parts of `name` as Spark's parser reads a multipart identifier, or MergeError."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException

    if not isinstance(name, str) or not name.strip():
        raise MergeError(f"dbt_merge: table {name!r}: the target must be a table name, "
                         "'database.table' or 'table'. The target was not changed.")
    parser = spark._jsparkSession.sessionState().sqlParser()
    try:
        parts = parser.parseMultipartIdentifier(name)
    except (Py4JJavaError, CapturedException) as error:
        # PySpark turns the JVM's ParseException into its own (CapturedException) once its
        # exception handler is installed, which SparkSession does
        text = (error.java_exception.getMessage() if isinstance(error, Py4JJavaError)
                else error.desc)
        first = [line for line in str(text or "").strip().splitlines() if line.strip()][:1]
        raise MergeError(
            f"dbt_merge: table '{name}': Spark cannot read it as a table name"
            + (f" ({first[0]})" if first else "")
            + ". Write 'database.table' or 'table', quoting a part that is not letters, digits "
            "and _ with backticks (`my table`). The target was not changed."
        ) from None
    return [str(p) for p in spark._jvm.scala.collection.JavaConverters.seqAsJavaList(parts)]


def resolve_target(spark, name: str) -> Target:
    """The table `name` names in the session (see the module's docstring), or MergeError."""
    from pyspark.errors import AnalysisException

    parts = parse_name(spark, name)
    shown = display_name(parts)

    def refuse(reason: str) -> None:
        raise MergeError(f"dbt_merge: table '{shown}': {reason} The target was not changed.")

    catalogs = {SESSION_CATALOG} | {
        key.split(".")[3] for key, _ in _conf_items(spark)
        if key.startswith("spark.sql.catalog.") and key.count(".") == 3
    }
    current = spark.catalog.currentCatalog()
    if len(parts) == 3 or (len(parts) == 2 and parts[0].lower() in catalogs):
        catalog, rest = parts[0], parts[1:]
    else:
        catalog, rest = current, parts
    if catalog.lower() != SESSION_CATALOG:
        refuse(f"it is in the catalog '{catalog}'; merge_dataframe writes tables of the session "
               f"catalog ({SESSION_CATALOG}), as dbt-spark does. Name a table of "
               f"{SESSION_CATALOG} ('database.table').")
    if len(rest) != 2 and not (len(rest) == 1 and len(parts) == 1):
        refuse(f"name a table as 'database.table' or 'table' (Spark read the name as {parts}).")
    database = rest[0] if len(rest) == 2 else spark.catalog.currentDatabase()
    identifier = rest[-1]

    # the object the name resolves to, as SQL would resolve it (a temporary view first), after
    # Iceberg's catalog cache has forgotten what this session dropped: a DROP through Spark's v1
    # command does not reach that cache, which then still gives the dropped table (to the
    # Catalog API, to a plain CREATE, and to the user's own reads) where there is none now, or a
    # view made since. Its keys are the names as written: the metastore's (lower case) too.
    # The flow refreshes the target anyway before it reads it (reload_table).
    quoted = ".".join(quote(p) for p in parts)
    for written in dict.fromkeys([quoted, quoted.lower()]):
        try:
            spark.catalog.refreshTable(written)
        except Exception:  # noqa: BLE001 - no such table (AnalysisException), or a name Spark's
            pass  # v1 catalog cannot refresh (a raw NoSuchElementException): nothing to forget
    try:
        found = spark.catalog.getTable(quoted)
    except AnalysisException:
        found = None
    if found is not None and (found.isTemporary or str(found.tableType).upper() == "TEMPORARY"):
        glob = spark.conf.get("spark.sql.globalTempDatabase", "global_temp")
        if found.namespace and found.namespace[0].lower() == glob.lower():
            refuse("it is a global temporary view, not a table. Name a table ('database.table').")
        refuse("it names a temporary view of the session, not a table (a temporary view comes "
               "first when a name has one part). Merge into a table: name it as "
               "'database.table'.")
    if found is not None and str(found.tableType).upper() == "VIEW":
        refuse("it is a view, not a table: a merge writes rows into a table. Name a table, or "
               "drop the view first if a table should replace it.")
    if found is not None and not listed(spark, found.namespace[-1] if found.namespace
                                        else database, found.name):
        # a table the Catalog API finds that SQL (SHOW TABLES, DESCRIBE, the merge) does not:
        # gone (an Iceberg table dropped in this session, if the refresh above missed it)
        found = None
    if found is not None:
        relation = Relation(found.namespace[-1] if found.namespace else database, found.name)
        return Target(relation, relation, display_name([relation.schema, relation.identifier]))

    if not spark.catalog.databaseExists(database):
        refuse(f"the database '{database}' does not exist. Create it first "
               f"(create database {display_name([database])}).")
    hive = spark.conf.get("spark.sql.catalogImplementation", "in-memory") == "hive"
    if hive and not _HIVE_NAME.fullmatch(identifier):
        refuse(f"the session's Hive metastore stores table names of letters, digits and _ only, "
               f"and '{identifier}' has other characters. Choose such a name.")
    relation = Relation(database, identifier)
    return Target(relation, None, display_name([database, identifier]))


def _conf_items(spark) -> list[tuple[str, str]]:
    """Every setting of the session that is set (the SparkContext's and the session's)."""
    return [(r[0], r[1]) for r in spark.sql("set").collect()]

