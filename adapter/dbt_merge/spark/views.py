"""merge_dataframe's check of the views a DataFrame reads that Spark may read at an old definition.

A view of Spark's session catalog that the Hive metastore registers as an Iceberg view, and
whose entry names a previous metadata file, has had a second version written since it was
created (replaced or altered), and Spark 3.5 reads such a view from the metastore's view text,
which Iceberg writes only when it creates the view: the first definition (docs/spark.md, Views on
an Iceberg session catalog). The merge flow checks a SQL SELECT from the plan Spark prints
(macros/stage/check_upstream_views.sql); a DataFrame has its analyzed plan as a structure, read
here without any plan text: its View nodes, nested or inside subquery expressions, name the
persistent views it reads, and the metastore's entry of each is read through the session's own
catalog. The refusal is the macros' message, so both front ends say the same.

What the DataFrame's plan does not show is not seen: a DataFrame checkpointed, or made from an
RDD or local rows, has no views in its plan (its rows are whatever was read when it was made).
"""

from __future__ import annotations

from typing import Any


def refuse_stale_views(df: Any, macros: Any) -> None:
    """Raise the merge's error (macros.raise_merge_error, with the macros' stale_views_message)
    when `df` reads a replaced or altered Iceberg view; return when it reads none."""
    catalog = df.sparkSession._jsparkSession.sessionState().catalog().externalCatalog()
    plan = df._jdf.queryExecution().analyzed()
    cached = [
        {"schema": schema, "name": name}
        for schema, name in tables_read(plan)
        if _table_type(catalog, schema, name) == "VIEW"
    ]
    if cached:
        macros.raise_merge_error(macros.cached_tables_message(cached))
    stale = [
        {"schema": schema, "name": name, "shown": None, "upstream": None}
        for schema, name in views_read(plan)
        if _replaced_iceberg_view(catalog, schema, name)
    ]
    if stale:
        macros.raise_merge_error(macros.stale_views_message(stale))


def views_read(plan: Any) -> list[tuple[str, str]]:
    """(database, name) of each persistent view a JVM logical plan reads, once, in plan order:
    its View nodes, in its children and in the plans of its subquery expressions. Temporary
    views are not listed (the views they read are, below them)."""
    found: list[tuple[str, str]] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        if node.nodeName() == "View" and not node.isTempView():
            identifier = node.desc().identifier()
            if identifier.database().isDefined():
                view = (identifier.database().get(), identifier.table())
                if view not in found:
                    found.append(view)
        for nested in (node.children(), node.subqueries()):
            stack.extend(nested.apply(i) for i in reversed(range(nested.size())))
    return found


def tables_read(plan: Any) -> list[tuple[str, str]]:
    """(database, name) of each table of the session catalog a JVM logical plan reads through
    Spark's DataSource V2 path (Iceberg's catalog, which caches tables), once, in plan order."""
    found: list[tuple[str, str]] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        if node.nodeName() == "DataSourceV2Relation" and node.catalog().isDefined() \
                and node.identifier().isDefined() \
                and node.catalog().get().name() == "spark_catalog":
            identifier = node.identifier().get()
            namespace = list(identifier.namespace())
            if len(namespace) == 1 and (namespace[0], identifier.name()) not in found:
                found.append((namespace[0], identifier.name()))
        for nested in (node.children(), node.subqueries()):
            stack.extend(nested.apply(i) for i in reversed(range(nested.size())))
    return found


def _table_type(catalog: Any, schema: str, name: str) -> str | None:
    """The metastore's type of schema.name now (VIEW, MANAGED, EXTERNAL), None when not there."""
    from py4j.protocol import Py4JJavaError

    try:
        return str(catalog.getTable(schema, name).tableType().name())
    except Py4JJavaError:
        return None


def _replaced_iceberg_view(catalog: Any, schema: str, name: str) -> bool:
    """Whether the metastore registers schema.name as an Iceberg view with a second version."""
    from py4j.protocol import Py4JJavaError

    try:
        table = catalog.getTable(schema, name)
    except Py4JJavaError:
        return False  # gone since the plan was made: reading the DataFrame fails with Spark's error
    properties = table.properties()
    kind = properties.get("table_type")
    return (
        table.tableType().name() == "VIEW"
        and kind.isDefined()
        and str(kind.get()).upper() == "ICEBERG-VIEW"
        and properties.contains("previous_metadata_location")
    )
