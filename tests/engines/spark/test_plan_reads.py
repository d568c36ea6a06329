"""Reads a Spark merge makes once, and where reading once would be wrong (issue 37, red teams
helper-56 and helper-57):

- the views the SELECT reads are read from the plan of its staged view, which the pin check
  reads anyway (no EXPLAIN of the SELECT of its own): test_empty_increment's statement counts;
- the SELECT's columns from that plan's text (_plan_columns), only where the text says them
  exactly: against DESCRIBE TABLE of the same view for names and types users give, and names
  that forge the lines read (helper-56: `a, b: int`; helper-57: line breaks printing a whole
  plan prefix; a value not written, a column dropped or widened by sync_all_columns, the run
  reported done), which merge as described;
- not the target's columns and properties with how the table is stored: read after the SELECT is
  staged, so that a commit another writer or a pre-hook makes before then is the state the run
  counts and writes (read once before, such a commit refused the run, or failed it with Spark's
  raw error).
"""

from __future__ import annotations

import pytest
from dbt_helpers import run_dbt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.harness import PROFILES_DIR
from support.scenario import message, project

MOR = {"write.merge.mode": "merge-on-read", "write.update.mode": "merge-on-read",
       "write.delete.mode": "merge-on-read"}


#: the Iceberg kinds of a table the write-once branch (merge-on-read, format 3) and the passes
#: (copy-on-write) write
KINDS = {"mor": MOR, "cow": {}, "v3": {"format-version": "3"}}


def _iceberg_tables(db, table_prefix: str, values: str) -> None:
    """One table `<table_prefix><kind>` (id bigint, name string) of each of KINDS, holding
    `values`."""
    for kind, props in KINDS.items():
        table = f"{table_prefix}{kind}"
        db.sql(f"drop table if exists {table}")
        tbl = ", ".join(f"'{k}' = '{v}'" for k, v in props.items())
        db.sql(f"create table {table} (id bigint, name string) using iceberg"
               + (f" tblproperties ({tbl})" if tbl else ""))
        db.sql(f"insert into {table} values {values}")


#: (SQL expression, type) pairs of the SELECTs' columns: atomic types, and ones whose text the
#: plan does not print exactly (nested types, intervals)
EXPRESSIONS = [
    ("cast(1 as bigint)", "bigint"), ("cast(1 as int)", "int"), ("'x'", "string"),
    ("cast(1.5 as decimal(12,3))", "decimal(12,3)"), ("cast(1 as double)", "double"),
    ("current_date()", "date"), ("current_timestamp()", "timestamp"),
    ("cast(null as timestamp_ntz)", "timestamp_ntz"), ("cast('a' as varchar(4))", "string"),
    ("cast('a' as char(3))", "string"), ("cast(null as binary)", "binary"), ("true", "boolean"),
    ("named_struct('a, b', 1, 'c: d', 'x')", None), ("array(1, 2)", None),
    ("map('k', 1)", None), ("interval '1' day", None), ("interval '1-2' year to month", None),
    ("cast(null as void)", "void"),
]

NAMES = st.one_of(
    st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True),
    st.sampled_from(["a b", "a, b", "c: d", "#note", "Ünï", "x`y", "sel ect", "ID", "Id2", "1x",
                     "a:b", "name: string", "more fields", "v", "w", "c",
                     # red team helper-56: names that forge the plan's schema line
                     "v: string, w", "zz: string\n", "v: string\nx", "x: bigint\n: string, c",
                     "v#1, w", "w#7L]", "v: string, w: string",
                     # helper-57: a name forging the schema line and the plan lines below it
                     "id: bigint, v: string\nGlobalLimit 0\n+- LocalLimit 0\n"
                     "   +- Project [id#1L, v#2]\nx",
                     "a: int\nGlobalLimit 0\n+- LocalLimit 0\n   +- Project [a#0]\n\n"
                     "== Optimized Logical Plan ==\nLocalRelation <empty>, [a#0]",
                     # helper-58: left out by relation_columns
                     "_hoodie_commit_time", "_hoodie_file_name"]),
)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@pytest.mark.spark
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(columns=st.lists(st.tuples(NAMES, st.sampled_from(EXPRESSIONS)), min_size=1, max_size=30,
                        unique_by=lambda c: c[0].lower()))
def test_the_columns_read_from_a_plan_are_describes_or_none(spark, columns):
    from types import SimpleNamespace

    from dbt_merge.render import Column, MacroContext

    def query(sql):
        frame = spark.sql(sql)
        return frame.columns, [tuple(r) for r in frame.collect()]

    def fail(text):
        raise AssertionError(text)

    macros = MacroContext({}, query, fail, engine="spark",
                          context={"api": SimpleNamespace(Column=SimpleNamespace(create=Column))})
    select = "select " + ", ".join(f"{expr} as {_quoted(name)}" for name, (expr, _) in columns)
    spark.conf.set("spark.sql.legacy.storeAnalyzedPlanForView", "true")
    try:
        spark.sql(f"create or replace temporary view plan_reads_v as {select}")
    finally:
        spark.conf.unset("spark.sql.legacy.storeAnalyzedPlanForView")
    text = "\n".join(r[0] for r in spark.sql(
        "explain extended select * from plan_reads_v limit 0").collect())
    # what the flow reads otherwise (relation_columns: `describe table`, Hudi's columns left out)
    described = [(c.column, c.data_type) for c in macros.relation_columns("plan_reads_v")]
    read = macros.get("_plan_columns")(text)
    if read is not None:
        assert [(c.column, c.data_type) for c in read] == described, select
    simple = (len(columns) <= 25 and all(t is not None for _, (_, t) in columns)
              and all(n.replace("_", "a").isalnum() and n.isascii() and not n[0].isdigit()
                      and not n.startswith("_hoodie_") for n, _ in columns))
    # where the text says the columns exactly, they are read from it (no DESCRIBE)
    assert (read is not None) == simple, (select, text.split("\n== Optimized")[0])


@pytest.mark.spark
@pytest.mark.parametrize("db", ["spark"], indirect=True)
def test_a_pre_hook_that_commits_to_the_table_is_seen(db, tmp_path):
    """A pre-hook deletes a row of the table (a commit after the run read how it is stored): the
    merge counts from the table as the hook left it, on every Iceberg kind (the write-once
    branch of merge-on-read and format 3, the passes of copy-on-write). Read with how the table
    is stored, its snapshot was the one before the hook, and the run was refused as another
    writer's commit."""
    s = "plan_reads_hooks"
    db.engine.setup(s)
    kinds = KINDS
    _iceberg_tables(db, f"{s}.h_", ", ".join(f"({k}, 'v{k}')" for k in range(10)))
    models = {}
    for kind, props in kinds.items():
        models[f"h_{kind}"] = (
            {"schema": s, "unique_key": "id", "file_format": "iceberg", "tblproperties": props,
             "pre_hook": "delete from {{ this }} where id = 0"},
            "select cast(id as bigint) as id, concat('r_', cast(id as string)) as name "
            "from range(8, 12)")
    root = project(db, tmp_path, "plan_reads_hooks", models)
    # twice: the second run is the steady state (the table last written by the package)
    for day in (1, 2):
        if day == 2:
            for kind in kinds:
                db.sql(f"insert into {s}.h_{kind} values (0, 'back')")
        run = run_dbt(["run"], root, "spark", PROFILES_DIR)
        for kind in kinds:
            want = ("2 inserted, 2 updated, 0 deleted, 0 unchanged, 11 total" if day == 1
                    else "0 inserted, 0 updated, 0 deleted, 4 unchanged, 11 total")
            assert want in message(run, f"h_{kind}"), (day, kind, message(run, f"h_{kind}"))
            rows = db.sql(f"select id from {s}.h_{kind} order by id")
            assert [r[0] for r in rows] == list(range(1, 12)), (day, kind, rows)


@pytest.mark.spark
@pytest.mark.parametrize("db", ["spark"], indirect=True)
def test_another_writers_commit_before_the_stage_is_counted(db, tmp_path):
    """Red team helper-56: another writer deletes a row after the run read how the table is
    stored and before it stages its SELECT (a dbt callback, as the statement that stages it is
    sent). The run counts and writes the table as that commit left it: the deleted key is
    inserted again, the total is the table's. Read once before, merge-on-read and format 3
    refused the run as another writer's commit and copy-on-write failed with Spark's raw error."""
    s = "plan_reads_race"
    db.engine.setup(s)
    kinds = KINDS
    _iceberg_tables(db, f"{s}.w_", "(1, 'a'), (2, 'b'), (3, 'c')")
    models = {}
    for kind, props in kinds.items():
        models[f"w_{kind}"] = (
            {"schema": s, "unique_key": "id", "file_format": "iceberg", "tblproperties": props},
            "select cast(id as bigint) as id, name from values (2, 'b'), (4, 'd') as t(id, name)")
    root = project(db, tmp_path, "plan_reads_race", models)
    written = set()

    def writer(event) -> None:
        if (event.info.name == "SQLQuery" and event.data.node_info
                and "create or replace temporary view" in event.data.sql):
            model = event.data.node_info.node_name
            if model not in written:
                written.add(model)
                db.sql(f"delete from {s}.{model} where id = 2")

    run = run_dbt(["run"], root, "spark", PROFILES_DIR, callbacks=[writer])
    assert written == set(models)
    for kind in kinds:
        assert "2 inserted, 0 updated, 0 deleted, 0 unchanged, 4 total" in message(
            run, f"w_{kind}"), (kind, message(run, f"w_{kind}"))
        rows = db.sql(f"select id, name from {s}.w_{kind} order by id")
        assert [tuple(r) for r in rows] == [(1, "a"), (2, "b"), (3, "c"), (4, "d")], (kind, rows)


@pytest.mark.spark
@pytest.mark.parametrize("db", ["spark"], indirect=True)
def test_column_names_that_forge_the_plan_are_merged_as_described(db, tmp_path):
    """Red team helper-56: a SELECT column named so that the plan's schema line reads as other
    columns (`zz: string` and a newline, `v: string, w`) hid a later column from the merge (its
    new value not written, or the column dropped by sync_all_columns) while the run reported
    done. The columns are those DESCRIBE gives: every value written, no column dropped."""
    s = "plan_reads_names"
    db.engine.setup(s)
    cases = {
        "f_newline": ("upsert", "ignore", "id bigint, v string, c string",
                      "(1, 'old', 'old')",
                      "select cast(2 as bigint) as id, 'new' as v, 'q' as `zz: string\n`, "
                      "'newc' as c union all select 1, 'old', 'q', 'old'"),
        # helper-58: a name relation_columns leaves out, in the table too
        "f_hoodie": ("upsert", "append_new_columns",
                     "id bigint, v string, _hoodie_commit_time string",
                     "(2, 'old', 'h_old')",
                     "select cast(2 as bigint) as id, 'new' as v, 'hx' as _hoodie_commit_time "
                     "union all select 3, 'three', 'hy'"),
        # helper-57: the name forges the schema line and the plan lines below it
        "f_prefix": ("upsert", "sync_all_columns", "id bigint, v string, c string",
                     "(2, 'old', 'old')",
                     "select 'q' as `id: bigint, v: string\nGlobalLimit 0\n+- LocalLimit 0\n"
                     "   +- Project [id#1L, v#2]\nx`, cast(2 as bigint) as id, 'new' as v, "
                     "'newc' as c"),
        "f_comma": ("upsert", "sync_all_columns",
                    "id bigint, v string, w string, `v: string, w` string",
                    "(1, 'a', 'b', 'oldq')",
                    "select cast(1 as bigint) as id, 'a' as v, 'b' as w, 'newq' as `v: string, w`"),
    }
    models = {}
    for model, (strategy, change, columns, row, select) in cases.items():
        db.sql(f"drop table if exists {s}.{model}")
        db.sql(f"create table {s}.{model} ({columns}) using iceberg tblproperties "
               "('write.merge.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read', "
               "'write.delete.mode' = 'merge-on-read')")
        db.sql(f"insert into {s}.{model} values {row}")
        models[model] = ({"schema": s, "unique_key": "id", "strategy": strategy,
                          "on_schema_change": change, "file_format": "iceberg",
                          "tblproperties": MOR}, select)
    root = project(db, tmp_path, "plan_reads_names", models)
    run = run_dbt(["run"], root, "spark", PROFILES_DIR)
    assert "1 inserted, 0 updated, 0 deleted, 1 unchanged, 2 total" in message(run, "f_newline"), (
        message(run, "f_newline"))
    assert [tuple(r) for r in db.sql(f"select id, v, c from {s}.f_newline order by id")] == [
        (1, "old", "old"), (2, "new", "newc")]
    assert "0 inserted, 1 updated, 0 deleted, 0 unchanged, 1 total" in message(run, "f_prefix"), (
        message(run, "f_prefix"))
    rows = db.sql(f"select id, v, c from {s}.f_prefix")
    assert [tuple(r) for r in rows] == [(2, "new", "newc")], rows
    columns = [r[0] for r in db.sql(f"describe table {s}.f_prefix")]
    assert columns[:3] == ["id", "v", "c"] and len(columns) == 4, columns
    assert "1 inserted, 1 updated, 0 deleted, 0 unchanged, 2 total" in message(run, "f_hoodie"), (
        message(run, "f_hoodie"))
    rows = db.sql(f"select id, v, _hoodie_commit_time from {s}.f_hoodie order by id")
    assert [tuple(r) for r in rows] == [(2, "new", "h_old"), (3, "three", None)], rows
    assert "0 inserted, 1 updated, 0 deleted, 0 unchanged, 1 total" in message(run, "f_comma"), (
        message(run, "f_comma"))
    assert [tuple(r) for r in db.sql(f"select * from {s}.f_comma")] == [(1, "a", "b", "newq")]


@pytest.mark.spark
@pytest.mark.parametrize("db", ["spark"], indirect=True)
def test_one_metastore_lookup_per_schema_for_views_and_tables(db, tmp_path):
    """A SELECT reading a view and a table of one schema: the metastore is asked once for that
    schema (both the stale-view lookup and the dropped-table lookup read it), and a view
    replaced since it was created is still refused, the target as it was."""
    s = "plan_reads_show"
    db.engine.setup(s)
    db.sql(f"drop view if exists {s}.src_v")
    db.sql(f"drop table if exists {s}.src_t")
    db.sql(f"create table {s}.src_t (id bigint, name string) using iceberg")
    db.sql(f"insert into {s}.src_t values (1, 'a'), (2, 'b')")
    db.sql(f"create view {s}.src_v as select id, name from {s}.src_t where id = 1")
    db.sql(f"drop table if exists {s}.one")
    db.sql(f"create table {s}.one (id bigint, name string) using iceberg")
    db.sql(f"insert into {s}.one values (1, 'x')")
    models = {"one": ({"schema": s, "unique_key": "id", "file_format": "iceberg"},
                      f"select id, name from {s}.src_v union all "
                      f"select id, name from {s}.src_t where id = 2")}
    root = project(db, tmp_path, "plan_reads_show", models)
    shows = []

    def collect(event) -> None:
        if (event.info.name == "SQLQuery" and event.data.node_info
                and "show table extended in `" in event.data.sql.lower()):
            # the package's lookups (dbt-spark's own listing of the schema is `like '*'`)
            shows.append(event.data.sql)

    run = run_dbt(["run"], root, "spark", PROFILES_DIR, callbacks=[collect])
    assert "1 inserted, 1 updated, 0 deleted, 0 unchanged, 2 total" in message(run, "one"), (
        message(run, "one"))
    assert len(shows) == 1, [" ".join(q.split()[-8:]) for q in shows]
    db.sql(f"create or replace view {s}.src_v as select id, name from {s}.src_t where id = 2")
    before = [tuple(r) for r in db.sql(f"select id, name from {s}.one order by id")]
    run = run_dbt(["run"], root, "spark", PROFILES_DIR)
    assert f"reads {s}.src_v, an Iceberg view replaced" in message(run, "one"), message(run, "one")
    assert [tuple(r) for r in db.sql(f"select id, name from {s}.one order by id")] == before
