"""DuckDB tables (issue 21): time zones in keys and values, a merge_history_table shared under
--threads or placed in another database, and targets with constraints. Rows, statistics,
messages, and the target as it was on refusal."""

from __future__ import annotations

import pytest
from support.cases import STRATEGY_NAMES
from support.reference import Options, canonical, merge
from support.scenario import Db, dbt, message, project

ZONES = ["UTC", "America/New_York", "Asia/Kolkata"]


@pytest.fixture
def duck():
    db = Db("duckdb")
    yield db
    db.close()


def _target(db: Db, schema: str, name: str, select: str) -> None:
    db.sql(f"drop schema if exists {schema} cascade")
    db.sql(f"create schema {schema}")
    db.sql(f"create table {schema}.{name} as {select}")


# ------------------------------------------------------------- class 3: time zones

ZONED = "timestamptz '2024-01-01 12:00:00+00'"
NAIVE = "timestamp '2024-01-01 12:00:00'"


TZ_CASES = {
    "key_naive_into_zoned": (
        f"select {ZONED} as k, {ZONED} as at, 'a' as v",
        f"select {NAIVE} as k, {ZONED} as at, 'b' as v",
        "unique_key column 'k' is timestamp in the SELECT but timestamp with time zone in the "
        "target: they match only through the session time zone"),
    "key_zoned_into_naive": (
        f"select {NAIVE} as k, {NAIVE} as at, 'a' as v",
        f"select {ZONED} as k, {NAIVE} as at, 'b' as v",
        "unique_key column 'k' is timestamp with time zone in the SELECT but timestamp in the "
        "target"),
    "value_naive_into_zoned": (
        f"select 1 as k, {ZONED} as at, 'a' as v", f"select 1 as k, {NAIVE} as at, 'b' as v",
        "column 'at' is timestamp in the SELECT but timestamp with time zone in the target: its "
        "values are converted through the session time zone"),
    "value_zoned_into_date": (
        "select 1 as k, date '2024-01-01' as at, 'a' as v",
        f"select 1 as k, {ZONED} as at, 'b' as v",
        "column 'at' is timestamp with time zone in the SELECT but date in the target"),
}


def test_mixed_time_zone_columns_are_refused_in_every_zone(duck, tmp_path):
    """Each case under each session time zone (dbt-duckdb's TimeZone, set by a pre-hook)."""
    s = "duck_tz_refused"
    duck.sql(f"drop schema if exists {s} cascade")
    duck.sql(f"create schema {s}")
    models, expected = {}, {}
    for case, (target_select, select, excerpt) in TZ_CASES.items():
        for i, zone in enumerate(ZONES):
            model = f"{case}_{i}"
            duck.sql(f"create table {s}.{model} as {target_select}")
            cfg = {"schema": s, "unique_key": "k", "pre_hook": f"set TimeZone = '{zone}'"}
            models[model] = (cfg, select)
            expected[model] = (excerpt, duck.rows(s, model))
    run = dbt(duck, project(duck, tmp_path, "tz_refused", models), "run")
    for model, (excerpt, before) in expected.items():
        text = " ".join(run.error(model).split())
        assert f"dbt_merge: model '{model}': " + excerpt in text, text
        assert "at time zone 'UTC'" in text and "The target was not changed." in text
        assert duck.rows(s, model) == before


def test_stating_the_time_zone_merges_alike_in_every_zone(duck, tmp_path):
    """The fix the message names: the key converted with an explicit zone matches the same row
    whatever the session's zone."""
    s = "duck_tz_stated"
    duck.sql(f"drop schema if exists {s} cascade")
    duck.sql(f"create schema {s}")
    select = (f"select {NAIVE} at time zone 'UTC' as k, 'b' as v union all "
              f"select timestamp '2024-06-01 08:30:00' at time zone 'UTC', 'c'")
    models = {}
    for i, zone in enumerate(ZONES):
        duck.sql(f"create table {s}.m_{i} as select {ZONED} as k, 'a' as v")
        cfg = {"schema": s, "unique_key": "k", "pre_hook": f"set TimeZone = '{zone}'"}
        models[f"m_{i}"] = (cfg, select)
    run = dbt(duck, project(duck, tmp_path, "tz_stated", models), "run")
    for model in models:
        assert message(run, model) == (
            "MERGE upsert: 1 inserted, 1 updated, 0 deleted, 0 unchanged, 2 total")
        got = duck.sql(f"select epoch(k), v from {s}.{model} order by 1")
        assert got == [(1704110400.0, "b"), (1717230600.0, "c")], (model, got)


# ------------------------------------------------------------- classes 8, 10: merge_history_table


def test_models_sharing_a_new_history_table_under_threads(duck, tmp_path):
    """First use of one history table by four models at once: each merge commits and writes its
    row (DuckDB refused the second CREATE of the table with `Catalog write-write conflict`)."""
    s = "duck_history_threads"
    duck.sql(f"drop schema if exists {s} cascade")
    duck.sql(f"create schema {s}")
    models = {}
    for i in range(4):
        duck.sql(f"create table {s}.m{i} as select 1::bigint as id, 'a' as v")
        models[f"m{i}"] = ({"schema": s, "unique_key": "id", "merge_history_table": "shared"},
                           f"select 1::bigint as id, 'b{i}' as v union all select 2, 'new'")
    run = dbt(duck, project(duck, tmp_path, "history_threads", models), "run", "--threads", "4")
    for i in range(4):
        assert message(run, f"m{i}") == (
            "MERGE upsert: 1 inserted, 1 updated, 0 deleted, 0 unchanged, 2 total")
        assert duck.rows(s, f"m{i}") == [(1, f"b{i}"), (2, "new")]
    history = duck.sql(f"select model_unique_id, inserted, updated, total from {s}.shared")
    assert sorted(history) == [(f"model.history_threads_duckdb.m{i}", 1, 1, 2) for i in range(4)]


def test_history_table_in_another_database_is_refused(duck, tmp_path):
    s = "duck_history_other_db"
    _target(duck, s, "m", "select 1::bigint as id, 'a' as v")
    cfg = {"schema": s, "unique_key": "id", "merge_history_table": "elsewhere.main.history"}
    model = {"m": (cfg, "select 1::bigint as id, 'b' as v")}
    run = dbt(duck, project(duck, tmp_path, "history_db", model), "run")
    text = " ".join(run.error("m").split())
    assert ("dbt_merge: model 'm': merge_history_table 'elsewhere.main.history' is in the "
            "database 'elsewhere', but the model's table is in 'integration_tests': DuckDB writes "
            "the history row in the merge's own transaction") in text, text
    assert "Put the history table in 'integration_tests'" in text
    assert duck.rows(s, "m") == [(1, "a")]


def test_history_table_names_with_quoted_parts(duck, tmp_path):
    """merge_history_table names as DuckDB reads them: a quoted part may hold a dot (before
    2026-11-29 the name was split on every dot: '"h.x"' failed with "Schema with name "h does not
    exist", '"s"."h"' looked for a schema named with its quotes). A part holding a double quote
    is refused before anything is written: dbt-duckdb's relations do not escape it."""
    s = "duck_history_quoted"
    duck.sql(f"drop schema if exists {s} cascade")
    duck.sql(f"create schema {s}")
    names = {"q1": '"h.x"', "q2": f'"{s}"."h y"', "q3": f'{s}."Q.z"'}
    models = {}
    for model, name in names.items():
        duck.sql(f"create table {s}.{model} as select 1::bigint as id, 'a' as v")
        models[model] = ({"schema": s, "unique_key": "id", "merge_history_table": name},
                         "select 1::bigint as id, 'b' as v")
    duck.sql(f"create table {s}.bad as select 1::bigint as id, 'a' as v")
    models["bad"] = ({"schema": s, "unique_key": "id", "merge_history_table": '"h""q"'},
                     "select 1::bigint as id, 'b' as v")
    run = dbt(duck, project(duck, tmp_path, "history_quoted", models), "run")
    for model in names:
        assert message(run, model) == (
            "MERGE upsert: 0 inserted, 1 updated, 0 deleted, 0 unchanged, 1 total"), model
    for schema, table in ((s, "h.x"), (s, "h y"), (s, "Q.z")):
        rows = duck.sql(f'select updated from {schema}."{table}"')
        assert rows == [(1,)], (schema, table, rows)
    text = " ".join(run.error("bad").split())
    assert ("dbt_merge: model 'bad': merge_history_table '\"h\"\"q\"' cannot be named in SQL as a "
            "table of duckdb") in text, text
    assert duck.rows(s, "bad") == [(1, "a")]


# ------------------------------------------------------------- class 9: targets with constraints

# The target: `id` (a PRIMARY KEY, with `pk`), `name`, `amount`, with `generated` a column
# `g` GENERATED ALWAYS AS (amount * 2), with `soft` a `deleted` flag; with `fk` a child table
# whose FOREIGN KEY references rows 1-3. The SELECT changes referenced rows (1: name, 3:
# amount), keeps 2 as it is and brings 7 and 8; rows 4-6, referenced by nothing, are the ones
# full_merge deletes. `wide`: merge_update_columns=['name'] (the changes hold whole row images).
CONSTRAINT_SHAPES = {
    "pk_fk": {"pk", "fk"},
    "generated": {"generated"},
    "pk_fk_generated": {"pk", "fk", "generated"},
}


def _constraint_cases():
    """Every strategy on each shape; the wide changes with upsert and full_merge; soft deletes."""
    for strategy in STRATEGY_NAMES:
        for shape, parts in CONSTRAINT_SHAPES.items():
            for wide in (False, True) if strategy in ("upsert", "full_merge") else (False,):
                yield f"{strategy}_{shape}{'_wide' if wide else ''}", strategy, parts, wide, False
    for shape in ("pk_fk", "pk_fk_generated"):
        yield f"soft_{shape}", "full_merge", CONSTRAINT_SHAPES[shape], False, True


def _constraint_target(duck: Db, s: str, name: str, parts: set, soft: bool) -> list[dict]:
    columns = ["id bigint" + (" primary key" if "pk" in parts else ""), "name varchar",
               "amount double"]
    if "generated" in parts:
        columns.append("g double generated always as (amount * 2) virtual")
    if soft:
        columns.append("deleted boolean")
    duck.sql(f"create table {s}.{name} ({', '.join(columns)})")
    rows = [{"id": i, "name": f"n{i}", "amount": float(i), **({"deleted": False} if soft else {})}
            for i in range(1, 7)]
    names = list(rows[0])
    duck.sql(f"insert into {s}.{name} ({', '.join(names)}) values "
             + ", ".join("(" + ", ".join(repr(r[c]) for c in names) + ")" for r in rows))
    if "fk" in parts:
        duck.sql(f"create table {s}.{name}_child "
                 f"(cid bigint, pid bigint references {s}.{name}(id))")
        duck.sql(f"insert into {s}.{name}_child values (10, 1), (20, 2), (30, 3), (31, 3)")
    return rows


COLUMN_TYPES = {"id": "bigint", "name": "varchar", "amount": "double", "deleted": "boolean"}


def test_targets_with_constraints_merge_like_the_reference(duck, tmp_path):
    """Every strategy on targets with a primary key, rows a foreign key references, a generated
    column, with the narrow and the wide changes and soft deletes: the rows and statistics of
    the reference merge, `g` computed for every row, the child rows kept; and again on a
    second run."""
    s = "duck_constraints"
    duck.sql(f"drop schema if exists {s} cascade")
    duck.sql(f"create schema {s}")
    source = [{"id": 1, "name": "N1", "amount": 1.0}, {"id": 2, "name": "n2", "amount": 2.0},
              {"id": 3, "name": "n3", "amount": 30.0}, {"id": 7, "name": "n7", "amount": 7.0},
              {"id": 8, "name": "n8", "amount": 8.0}]
    models, cases = {}, {}
    for name, strategy, parts, wide, soft in _constraint_cases():
        target = _constraint_target(duck, s, name, parts, soft)
        rows = [{**r, "deleted": False} for r in source] if soft else source
        opts = Options(update_columns=["name"] if wide else None,
                       soft_delete="deleted" if soft else None)
        cases[name] = (strategy, rows, target, opts)
        cfg = {"schema": s, "unique_key": "id", "strategy": strategy}
        if wide:
            cfg["merge_update_columns"] = ["name"]
        if soft:
            cfg["soft_delete_column"] = "deleted"
        select = " union all ".join(
            "select " + ", ".join(f"cast({v!r} as {COLUMN_TYPES[c]}) as {c}" for c, v in r.items())
            for r in rows)
        models[name] = (cfg, select)
    root = project(duck, tmp_path, "constraints", models)
    for step in ("first", "rerun"):
        run = dbt(duck, root, "run", "--threads", "4")
        for name, (strategy, rows, target, opts) in cases.items():
            after, stats = merge(strategy, rows, target, ["id"], opts)
            assert run.stats(name) == stats.as_dict(), (step, name, message(run, name))
            columns = list(target[0])
            got = [dict(zip(columns, r, strict=True))
                   for r in duck.sql(f"select {', '.join(columns)} from {s}.{name}")]
            assert canonical(got, columns) == canonical(after, columns), (step, name, got)
            if "generated" in name:
                assert duck.sql(f"select count(*) from {s}.{name} where g is distinct from "
                                "amount * 2") == [(0,)], name
            if "fk" in name:
                assert duck.sql(f"select count(*) from {s}.{name}_child") == [(4,)], name
            cases[name] = (strategy, rows, after, opts)


def test_a_select_with_a_generated_column_is_refused(duck, tmp_path):
    s = "duck_generated_refused"
    duck.sql(f"drop schema if exists {s} cascade")
    duck.sql(f"create schema {s}")
    duck.sql(f"create table {s}.m (id bigint, amount double, "
             "g double generated always as (amount * 2) virtual)")
    duck.sql(f"insert into {s}.m (id, amount) values (1, 1.0)")
    model = {"m": ({"schema": s, "unique_key": "id"},
                   "select 1::bigint as id, 5.0::double as amount, 10.0::double as g")}
    run = dbt(duck, project(duck, tmp_path, "generated_refused", model), "run")
    text = " ".join(run.error("m").split())
    assert ("dbt_merge: model 'm': column 'g' is a generated column of the target "
            f'"integration_tests"."{s}"."m": the table computes its value, so no merge can write '
            "it. Remove it from the SELECT. The target was not changed.") in text, text
    assert duck.sql(f"select * from {s}.m") == [(1, 1.0, 2.0)]


# ------------------------------------------------------------- names the session's collation folds

@pytest.mark.parametrize(("collation", "target", "other"), [
    ("noaccent", "café", "cafe"), ("nocase", "ä", "Ä"), ("noaccent.nocase", "Ä", "ä")])
def test_a_target_named_like_another_table_under_the_session_collation(collation, target, other):
    """Two tables whose names DuckDB's catalog keeps apart (it folds A-Z only) but the
    connection's default_collation makes equal: the merge reads its own table's definition (a
    primary key on the other one), merges, and counts; with the definition read beside the
    columns in scalar subqueries it failed with DuckDB's "More than one row returned by a
    subquery", and read alone it could take the other table's (red team helper-87)."""
    import duckdb
    from dbt_merge.duckdb import merge_table

    con = duckdb.connect()
    con.execute(f'create table "{other}" (id int primary key, v varchar, w int)')
    con.execute(f'create table "{target}" (id int, v varchar)')
    con.execute(f"""insert into "{target}" values (1, 'a')""")
    con.execute(f"set default_collation='{collation}'")
    result = merge_table(con, "select 1 as id, 'b' as v union all select 2, 'c'", f'"{target}"',
                         key_columns=["id"])
    assert (result.inserted, result.updated, result.deleted, result.total) == (1, 1, 0, 2)
    assert sorted(con.execute(f'select * from "{target}"').fetchall()) == [(1, "b"), (2, "c")]
    assert con.execute(f'select count(*) from "{other}"').fetchone()[0] == 0
    assert con.execute("select current_setting('default_collation')").fetchone()[0] == collation


GENERATED = "(k varchar, v int, g int generated always as (v * 2) virtual)"
LOOK_ALIKE = "(k varchar, w int, v int generated always as (w + 1) virtual)"


@pytest.mark.parametrize(("target", "other", "collation"), [
    ("ÄX", "äx", None), ("cafe", "café", "noaccent"), ("ÄX", "äx", "nocase"),
    ("t_\u00e9", "t_e\u0301", "de"), ("ΑΣ", None, None), ("İT", None, None)])
def test_generated_columns_and_references_of_the_target_itself(target, other, collation):
    """The target's generated columns and the foreign keys that reference it are looked up by
    its names as DuckDB's catalog resolves them (red team helper-88): lower() on both sides took
    a look-alike table's generated column `v` for the target's (the merge refused the SELECT's
    column v), and missed a target named `ΑΣ` or `İT` itself (a raw "Cannot insert into a
    generated column"; a referenced row deleted and inserted again: a raw foreign key error)."""
    import duckdb
    from dbt_merge.duckdb import merge_table

    quoted = '"' + target + '"'
    con = duckdb.connect()
    con.execute(f"create table {quoted} {GENERATED}")
    con.execute(f"insert into {quoted} (k, v) values ('b', 2)")
    if other:
        con.execute(f'create table "{other}" {LOOK_ALIKE}')
    if collation:
        con.execute(f"set default_collation='{collation}'")
    source = "select * from (values ('a', 10), ('b', 20)) s(k, v)"
    result = merge_table(con, source, f"memory.main.{quoted}", key_columns=["k"])
    assert (result.inserted, result.updated, result.total) == (1, 1, 2)
    assert sorted(con.execute(f"select * from {quoted}").fetchall()) == [
        ("a", 10, 20), ("b", 20, 40)]
    if other:
        return
    referenced = duckdb.connect()
    referenced.execute(f"create table {quoted} (k varchar primary key, v int)")
    referenced.execute(f"insert into {quoted} values ('b', 2)")
    referenced.execute(f"create table child (k varchar references {quoted}(k))")
    referenced.execute("insert into child values ('b')")
    result = merge_table(referenced, source, quoted, key_columns=["k"])
    assert (result.inserted, result.updated, result.total) == (1, 1, 2)
    assert sorted(referenced.execute(f"select * from {quoted}").fetchall()) == [
        ("a", 10), ("b", 20)]
