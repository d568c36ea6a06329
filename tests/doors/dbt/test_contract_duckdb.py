"""The door contract of a `merge` model on dbt-duckdb: the name forms dbt can express (a model's
`schema` and `alias` configs holding dots, quotes, spaces, dashes, unicode, mixed case) x what is
at the model's name (a table, a view, nothing yet) x the objects around it (a table of the same
name in another schema, a table `my`.`t` beside `"my.t"`), in one `dbt run` of a handful of
models, driven in-process (tests/dbt_helpers.py). dbt resolves `this` itself (fully qualified and
quoted), so the door's contract here is: each model merges into exactly its own relation, with
the reference model's rows and statistics; a view at the model's name is dbt's own object and is
replaced by the model's table, as dbt-duckdb's table materialization replaces it (renamed away,
then dropped): the model's rows, all counted inserted; nothing else in the database changes
(every other table and its rows, views, schemas).

Not here: a double quote in a schema or alias (dbt renders a relation as `"schema"."alias"`
without doubling a quote inside, dbt-adapters' BaseRelation, so dbt-duckdb's own materializations
fail on it too, with DuckDB's parser error, before anything runs), and spaces around an alias
(dbt trims them: `this` is the trimmed name, which the model then merges into).

The same run covers issue 30's items 14 and 15 for dbt models: soft deletes begun on an
existing table (`soft_delete_column` with `on_schema_change='append_new_columns'`, the columns
not in the table yet; one `deleted_at` per merge) and a table whose columns the SELECT lacks have
a DEFAULT (a sequence, a load time, NOT NULL): inserted rows get the default.
"""

from __future__ import annotations

import pytest
from suite_summary import record_cases
from support.reference import Options, canonical, merge
from support.scenario import Db, dbt, message, project

from doors.dimensions import draw_identifiers, qualified

DATABASE = "integration_tests"  # the tests' DuckDB file (integration_tests/profiles.yml)
NAMES = ("id", "name", "v")
TARGET = [(1, "t1", 101), (2, "t2", 102), (3, "t3", 103)]
SOURCE = [(2, "t2", 102), (3, "n3", 1003), (4, "n4", 1004)]
SELECT = ("select * from (values " + ", ".join(f"({a}::bigint, '{b}', {c}::bigint)"
                                               for a, b, c in SOURCE) + ") as s(id, name, v)")

#: model -> (schema, alias, what is at the name before the run)
MODELS = {
    "door_dot_alias": ("door_a", "my.t", "table"),
    "door_quote_alias": ("door_a", "it's", "nothing"),
    "door_dotted_schema": ("Dörr.s", "ünï", "table"),
    "door_mixed_case": ("door_a", "MixedCase", "table"),
    "door_dash_space": ("door b", "odd-name x", "nothing"),
    "door_view": ("door_a", "a view", "view"),
    "door_keyword": ("select", "from", "nothing"),
}
#: and a few more, drawn as the other doors' names are (dbt cannot express a double quote)
MODELS |= {f"door_drawn_{i}": (schema, alias, kind) for i, (schema, alias, kind) in enumerate(
    zip(["door_drawn"] * 3, draw_identifiers(3, without='"'), ["table", "view", "nothing"],
        strict=True))}
#: Objects beside the targets, which the run must leave as they are.
DECOYS = [("door_a", "MixedCase_other"), ("my", "t"), ("door_other", "my.t"),
          ("door_other", "ünï")]


def _table(db: Db, schema: str, name: str, rows: list[tuple]) -> None:
    db.sql(f"create schema if not exists {qualified(DATABASE, schema)}")
    db.sql(f"create table {qualified(DATABASE, schema, name)} (id bigint, name varchar, v bigint)")
    db.sql(f"insert into {qualified(DATABASE, schema, name)} values "
           + ", ".join(f"({a}, '{b}', {c})" for a, b, c in rows))


def _everything(db: Db) -> dict:
    """Every table (its rows, as text: NaN equals NaN) and view of the schemas this test makes
    (other tests' tables share the database file), and the database's schemas."""
    ours = sorted({s for s, _, _ in MODELS.values()} | {s for s, _ in DECOYS} | {"door_items"})
    listed = ", ".join("'" + s.replace("'", "''") + "'" for s in ours)
    where = f"database_name = '{DATABASE}' and schema_name in ({listed})"
    tables = {}
    for database, schema, name in db.sql(
            f"select database_name, schema_name, table_name from duckdb_tables() where {where}"):
        rows = db.sql(f"select * from {qualified(database, schema, name)}")
        tables[(schema, name)] = sorted(map(repr, rows))
    views = db.sql(f"select schema_name, view_name, sql from duckdb_views() where {where} "
                   "order by all")
    return {"tables": tables, "views": views}


@pytest.fixture(scope="module")
def door_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dbt_door")
    db = Db("duckdb")
    schemas = {s for s, _, _ in MODELS.values()} | {s for s, _ in DECOYS} | {"door_items"}
    for schema in schemas:
        db.sql(f"drop schema if exists {qualified(DATABASE, schema)} cascade")
    for schema, alias, kind in MODELS.values():
        db.sql(f"create schema if not exists {qualified(DATABASE, schema)}")
        if kind == "table":
            _table(db, schema, alias, TARGET)
        elif kind == "view":
            db.sql(f"create view {qualified(DATABASE, schema, alias)} as select 9::bigint as id, "
                   "'view' as name")
    for i, (schema, name) in enumerate(DECOYS):
        _table(db, schema, name, [(7, f"decoy{i}", 700 + i)])
    models = {m: ({"schema": s, "alias": a, "unique_key": "id"}, SELECT)
              for m, (s, a, _) in MODELS.items()}
    # items 14 and 15
    s = qualified(DATABASE, "door_items")
    db.sql(f"create schema {s}")
    _table(db, "door_items", "soft", TARGET + [(5, "t5", 105)])
    models["soft"] = ({"schema": "door_items", "unique_key": "id", "strategy": "full_merge",
                       "max_delete_fraction": 1, "soft_delete_column": "is_deleted",
                       "soft_delete_timestamp_column": "deleted_at",
                       "on_schema_change": "append_new_columns"}, SELECT)
    db.sql(f"create sequence {s}.seq start 100")
    db.sql(f"create table {s}.defaults (id bigint primary key, name varchar, v bigint, "
           f"sid bigint default nextval('{DATABASE}.door_items.seq') not null, "
           "note varchar default 'n/a', loaded_at timestamp default current_timestamp)")
    db.sql(f"insert into {s}.defaults (id, name, v, note) values "
           + ", ".join(f"({a}, '{b}', {c}, 'kept')" for a, b, c in TARGET))
    models["defaults"] = ({"schema": "door_items", "unique_key": "id"}, SELECT)
    before = _everything(db)
    old_sids = dict(db.sql(f"select id, sid from {s}.defaults"))
    run = dbt(db, project(db, tmp, "door_contract", models), "run", "--threads", "4")
    yield db, run, before, old_sids
    db.close()


def _reference(strategy: str, target: list[tuple] | None, **options):
    source = [dict(zip(NAMES, r, strict=True)) for r in SOURCE]
    rows = None if target is None else [dict(zip(NAMES, r, strict=True)) for r in target]
    return merge(strategy, source, rows, ["id"], Options(**options))


def test_each_model_merges_into_its_own_relation(door_run):
    db, run, _, _ = door_run
    failures = []
    for model, (schema, alias, kind) in MODELS.items():
        rows, stats = _reference("upsert", TARGET if kind == "table" else None)
        got_stats = run.stats(model) if str(run.result(model).status) == "success" else None
        if got_stats != stats.as_dict():
            failures.append(f"{model}: {message(run, model)} != {stats.as_dict()}")
            continue
        got = [dict(zip(NAMES, r, strict=True)) for r in db.sql(
            f"select * from {qualified(DATABASE, schema, alias)}")]
        if canonical(got, list(NAMES)) != canonical(rows, list(NAMES)):
            failures.append(f"{model}: rows of {schema}.{alias}: {got}")
    record_cases(len(MODELS), len(failures))
    assert not failures, "\n".join(failures)


def test_nothing_else_changes(door_run):
    """Every other table, with its rows, and every view but the one a model replaced."""
    db, _, before, _ = door_run
    after = _everything(db)
    targets = {(s, a) for s, a, _ in MODELS.values()} | {("door_items", "soft"),
                                                         ("door_items", "defaults")}
    kept = {k: v for k, v in before["tables"].items() if k not in targets}
    assert {k: v for k, v in after["tables"].items() if k not in targets} == kept
    replaced = [v for v in before["views"] if (v[0], v[1]) in targets]
    assert [v for v in before["views"] if v not in replaced] == after["views"]
    assert replaced and not [v for v in after["views"] if (v[0], v[1]) in targets]


def test_soft_deletes_begun_on_an_existing_table(door_run):
    """Before: the model failed asking for on_schema_change='append_new_columns', already set.
    The reference: the added column is NULL (live) in every row of the table, and false in the
    SELECT's rows (the package adds it so), so each matched row is updated."""
    db, run, _, _ = door_run
    target = [dict(zip(NAMES, r, strict=True)) | {"is_deleted": None}
              for r in TARGET + [(5, "t5", 105)]]
    source = [dict(zip(NAMES, r, strict=True)) | {"is_deleted": False} for r in SOURCE]
    rows, stats = merge("full_merge", source, target, ["id"],
                        Options(soft_delete="is_deleted", max_delete_fraction=1))
    assert str(run.result("soft").status) == "success", message(run, "soft")
    assert run.stats("soft") == stats.as_dict(), message(run, "soft")
    relation = qualified(DATABASE, "door_items", "soft")
    got = [dict(zip((*NAMES, "is_deleted"), r, strict=True))
           for r in db.sql(f"select id, name, v, is_deleted from {relation}")]
    assert canonical(got, [*NAMES, "is_deleted"]) == canonical(rows, [*NAMES, "is_deleted"])
    assert db.sql(f"select count(*), count(distinct deleted_at) from {relation} "
                  "where is_deleted") == [(2, 1)]


def test_inserted_rows_get_the_column_defaults(door_run):
    """Before: NOT NULL constraint failed on the sequence column, the model failed."""
    db, run, _, old_sids = door_run
    assert run.stats("defaults") == {"inserted": 1, "updated": 1, "deleted": 0, "unchanged": 1,
                                     "total": 4}, message(run, "defaults")
    got = db.sql(f"select id, name, sid, note, loaded_at is not null from "
                 f"{qualified(DATABASE, 'door_items', 'defaults')} order by id")
    assert got[:3] == [(1, "t1", old_sids[1], "kept", True), (2, "t2", old_sids[2], "kept", True),
                       (3, "n3", old_sids[3], "kept", True)]
    assert got[3][0] == 4 and got[3][2] > max(old_sids.values()) and got[3][3:] == ("n/a", True)
