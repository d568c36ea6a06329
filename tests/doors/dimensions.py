"""The door contract suite's dimensions, for every door that merges into a DuckDB name: the forms
a target's name takes, the kinds of object at that name, the caller's own objects around it, and
a snapshot of everything on a connection to compare before and after a call.

Door-independent: a door's contract test (test_<door>_contract.py) draws scenarios from
`scenarios()`, stages each on a connection of its own (`stage`), asks DuckDB itself what the
name reads (`read_by_duckdb`: the rows `select * from <name>` returns, matched to the objects
staged, each holding rows of its own) and states what the door must do with it. A new door is
born under the same dimensions: add its test module, not new dimensions.

Dimensions:
- name forms (NAME_FORMS): one part (in the current schema, or after USE), two parts (a schema,
  or `main`, which the temporary catalog shares), three parts (the database, an attached one),
  each part quoted or plain (when plain is a name: letters, digits and _ and no keyword DuckDB
  keeps), in its own case or another (DuckDB matches names ignoring ASCII case); identifiers
  with dots, quotes, spaces, dashes, unicode, keywords; and text that is not one table name
  (JUNK: an alias, a comment, a second statement, a string literal, four parts, ...);
- kinds (KINDS): table, view, temporary table, temporary view, nothing yet, missing schema,
  a database attached read-only;
- the caller's objects (CALLERS): a temporary table, temporary view or registered Arrow table
  of that name, a table of that name in another schema or database, an open transaction,
  another thread inside a call on the connection, a connection whose default_collation is
  nocase (the source corrects a name's case only), another cursor merging the same source
  into the same name at the same moment;
- dry run or not, and the strategy and kind of source (for the rows, the reference model).
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import duckdb
import pyarrow as pa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support.cases import _without_local_constants

settings.register_profile(
    "doors", derandomize=True, database=None, phases=[Phase.generate], deadline=None,
    suppress_health_check=list(HealthCheck),
)
settings.register_profile("doors_long", settings.get_profile("doors"), derandomize=False)

NAME_FORMS = ("one part", "one part after USE", "two parts", "two parts main",
              "two parts database", "three parts")
KINDS = ("table", "view", "temporary table", "temporary view", "nothing", "missing schema",
         "read-only database")
CALLERS = ("none", "temporary table of that name", "temporary view of that name",
           "registered Arrow table of that name", "table of that name in another schema",
           "table of that name in another database", "open transaction", "another thread",
           "nocase connection", "another cursor at once")
#: What makes a name's text not one table name: a suffix to a name that is one, or (JUNK_TEXT)
#: the whole text.
JUNK = (" x", ' as "x"', ";", " -- a comment", "; drop table x", " where true", ", other",
        ".a.b.c", "(", " using sample 1")
JUNK_TEXT = {"a string literal": lambda name: "'" + name.replace("'", "''") + "'",
             "empty": lambda name: "", "blank": lambda name: "   "}
#: Identifiers the issue and its kin tried, besides generated ones.
IDENTIFIERS = ("t", "T_Abc", "my.t", 'say "hi"', "odd-name", "a b", "ünï", "名前", "data", "select",
               "main", "t'x", "x$y", "Straße", " lead", "trail ", ".")
COLUMNS = (("id", "bigint"), ("name", "varchar"), ("v", "bigint"))


def quote(part: str) -> str:
    return '"' + part.replace('"', '""') + '"'


def qualified(*parts: str) -> str:
    return ".".join(quote(p) for p in parts)


@cache
def _kept_keywords() -> frozenset[str]:
    """Keywords DuckDB does not read as a plain table name (all but the unreserved ones)."""
    con = duckdb.connect()
    try:
        return frozenset(r[0] for r in con.execute(
            "select keyword_name from duckdb_keywords() where keyword_category <> 'unreserved'"
        ).fetchall())
    finally:
        con.close()


def plain(part: str) -> bool:
    """Whether `part` reads as itself without quotes."""
    return bool(re.fullmatch(r"[^\W\d]\w*", part)) and part.lower() not in _kept_keywords()


def render(part: str, style: str) -> str:
    """One part of a name as a user writes it: quoted, plain (if it can be), in another case."""
    if style == "other case":
        part = part.swapcase() if part.isascii() else part
    if style in ("plain", "other case") and plain(part):
        return part
    return quote(part)


@dataclass(frozen=True)
class Place:
    """Where an object is, as the catalog spells it."""

    database: str
    schema: str
    identifier: str

    def sql(self) -> str:
        return qualified(self.database, self.schema, self.identifier)


@dataclass
class Scenario:
    identifier: str
    form: str
    kind: str
    caller: str
    styles: tuple[str, ...]
    junk: str | None
    dry_run: bool
    strategy: str
    source_kind: str
    schema: str = "s"
    database: str = "memory"
    existing: bool = True  # read-only database: a table there, or nothing yet

    @property
    def place(self) -> Place:
        """Where the name's object is (or would be created)."""
        return Place(self.database, self.schema, self.identifier)

    @property
    def parts(self) -> tuple[str, ...]:
        if self.form.startswith("one part"):
            return (self.identifier,)
        if self.form == "two parts database":
            return (self.database, self.identifier)
        if self.form.startswith("two parts"):
            return (self.schema, self.identifier)
        return (self.database, self.schema, self.identifier)

    @property
    def text(self) -> str:
        """The name as the user writes it."""
        name = ".".join(render(p, s) for p, s in zip(self.parts, self.styles, strict=False))
        if self.junk in JUNK_TEXT:
            return JUNK_TEXT[self.junk](self.identifier)
        return name + (self.junk or "")

    def describe(self) -> str:
        return (f"{self.text!r} ({self.form}, {self.kind}, caller: {self.caller}, "
                f"{'dry run, ' if self.dry_run else ''}{self.strategy}, {self.source_kind})")


@st.composite
def scenarios(draw) -> Scenario:
    """One scenario: a name form, the kind of object at the name, the caller's objects."""
    identifier = draw(st.one_of(st.sampled_from(IDENTIFIERS), st.text(
        st.sampled_from(list("abcxyzTQ_019 .\"-'üß名é$")), min_size=1, max_size=8)))
    kind = draw(st.sampled_from(KINDS + ("table", "nothing") * 2))  # merges: a third
    forms = {
        "temporary table": ("one part", "two parts main", "three parts"),
        "temporary view": ("one part", "two parts main", "three parts"),
        "missing schema": ("two parts", "three parts"),
        "read-only database": ("two parts database", "three parts"),
    }.get(kind, NAME_FORMS)
    form = draw(st.sampled_from(forms))
    schema = draw(st.sampled_from(["s", "My.Schema", "ß s", "x"]))
    database = draw(st.sampled_from(["memory", "db2"])) if form in (
        "three parts", "two parts database") else "memory"
    if form in ("one part", "two parts main", "two parts database") or kind.startswith("temp"):
        schema = "main"
    if kind.startswith("temporary"):
        database = "temp"
    elif kind == "read-only database":
        database, schema = "ro", "main"
    callers = CALLERS + ("none",) * 3 if not kind.startswith("temporary") else (
        "none", "table of that name in another schema", "open transaction", "another thread")
    junk = draw(st.one_of(st.none(), st.none(), st.none(),
                          st.sampled_from(JUNK + tuple(JUNK_TEXT))))
    return Scenario(
        identifier=identifier, form=form, kind=kind, caller=draw(st.sampled_from(callers)),
        styles=tuple(draw(st.sampled_from(["quoted", "plain", "other case"])) for _ in range(3)),
        junk=junk, dry_run=draw(st.booleans()),
        strategy=draw(st.sampled_from(["upsert", "full_merge"])),
        source_kind=draw(st.sampled_from(["arrow", "arrow", "sql", "relation"])),
        schema=schema, database=database, existing=draw(st.booleans()),
    )


@cache
def draw_scenarios(n: int, profile: str = "doors") -> list[Scenario]:
    """`n` scenarios of as many different kinds as hypothesis gives in 5 n draws (derandomized:
    the same ones every run, unless the profile is doors_long). Consecutive draws are often
    variations of one scenario, so each is taken first for what it adds: a name form, kind and
    caller not taken yet, then an identifier or a text not taken yet."""
    drawn: list[Scenario] = []

    @settings(settings.get_profile(profile), max_examples=5 * n)
    @given(scenarios())
    def collect(scenario: Scenario) -> None:
        drawn.append(scenario)

    with _without_local_constants():  # the same draws whatever the project's modules hold
        collect()
    chosen: list[Scenario] = []
    for novelty in (lambda s: (s.form, s.kind, s.caller), lambda s: (s.kind, s.junk, s.dry_run),
                    lambda s: s.identifier, lambda s: s.text, id):
        seen = {novelty(s) for s in chosen}
        for scenario in drawn:
            if len(chosen) < n and scenario not in chosen and novelty(scenario) not in seen:
                chosen.append(scenario)
                seen.add(novelty(scenario))
    return chosen


def draw_identifiers(n: int, without: str = "") -> list[str]:
    """`n` different identifiers as scenarios() draws them (derandomized), none holding a
    character of `without`."""
    found: list[str] = []

    @settings(settings.get_profile("doors"), max_examples=20 * n)
    @given(scenarios())
    def collect(scenario: Scenario) -> None:
        name = scenario.identifier
        if name not in found and not set(name) & set(without) and name.strip() == name:
            found.append(name)

    with _without_local_constants():
        collect()
    return found[:n]


# ------------------------------------------------------------------ staging


@dataclass
class Staged:
    """What stage() made: every object holding rows (place -> kind, rows), what DuckDB reads for
    the name, the snapshot before the call, and the caller's other thread, if any (release()
    lets its call end)."""

    objects: dict[Place, tuple[str, list[tuple]]] = field(default_factory=dict)
    reads: tuple[Place, str] | None = None  # what DuckDB reads for the name (read_by_duckdb)
    before: dict | None = None  # the snapshot before the call (and before the other thread)
    thread: threading.Thread | None = None
    hold: threading.Event | None = None
    keep: list = field(default_factory=list)  # Python objects the connection reads

    def release(self) -> None:
        if self.hold is not None:
            self.hold.set()
            self.thread.join()
            self.hold = None


def rows_for(tag: int) -> list[tuple]:
    """Rows of an object, told apart from every other object's by `v`."""
    return [(i, f"o{tag}", tag * 100 + i) for i in (1, 2, 3)]


def _values_sql(rows: list[tuple]) -> str:
    return ("select * from (values " + ", ".join(f"({a}, '{b}', {c})" for a, b, c in rows)
            + ") as v(id, name, v)")


def _table(con, place_sql: str, rows: list[tuple], temporary: bool = False) -> None:
    con.execute(f"create {'temporary ' if temporary else ''}table {place_sql} "
                f"(id bigint, name varchar, v bigint)")
    con.executemany(f"insert into {place_sql} values (?, ?, ?)", rows)


def stage(con, scenario: Scenario, folder: Path) -> Staged:
    """Make on `con` the objects of `scenario`: the databases and schemas, the object at the name,
    the caller's objects; the transaction or the other thread last."""
    staged = Staged()
    con.execute("attach ':memory:' as db2")
    for database in ("memory", "db2"):
        for schema in ("s", "My.Schema", "ß s", "x", "other", scenario.schema):
            if scenario.kind == "missing schema" and (database, schema) == (
                    scenario.database, scenario.schema):
                continue
            con.execute(f"create schema if not exists {qualified(database, schema)}")
    place = scenario.place
    ro = folder / f"ro_{id(scenario)}.duckdb"
    if scenario.kind == "read-only database":
        con.execute(f"attach '{ro}' as ro")
        if scenario.existing:
            _table(con, place.sql(), rows_for(1))
            staged.objects[place] = ("table", rows_for(1))
        con.execute("detach ro")
        con.execute(f"attach '{ro}' as ro (read_only)")
    elif scenario.kind == "table":
        _table(con, place.sql(), rows_for(1))
        staged.objects[place] = ("table", rows_for(1))
    elif scenario.kind == "view":
        con.execute(f"create view {place.sql()} as {_values_sql(rows_for(2))}")
        staged.objects[place] = ("view", rows_for(2))
    elif scenario.kind == "temporary table":
        _table(con, quote(scenario.identifier), rows_for(3), temporary=True)
        staged.objects[place] = ("temporary table", rows_for(3))
    elif scenario.kind == "temporary view":
        con.execute(f"create temporary view {quote(scenario.identifier)} as "
                    f"{_values_sql(rows_for(4))}")
        staged.objects[place] = ("temporary view", rows_for(4))
    if scenario.form == "one part after USE":
        con.execute(f"use {qualified(scenario.database, scenario.schema)}")
    caller = scenario.caller
    if caller == "temporary table of that name":
        _table(con, quote(scenario.identifier), rows_for(5), temporary=True)
        staged.objects[Place("temp", "main", scenario.identifier)] = ("temporary table",
                                                                      rows_for(5))
    elif caller == "temporary view of that name":
        con.execute(f"create temporary view {quote(scenario.identifier)} as "
                    f"{_values_sql(rows_for(6))}")
        staged.objects[Place("temp", "main", scenario.identifier)] = ("temporary view", rows_for(6))
    elif caller == "registered Arrow table of that name":
        arrow = pa.table({"id": [r[0] for r in rows_for(7)], "name": [r[1] for r in rows_for(7)],
                          "v": [r[2] for r in rows_for(7)]})
        staged.keep.append(arrow)
        con.register(scenario.identifier, arrow)
        staged.objects[Place("temp", "main", scenario.identifier)] = ("temporary view", rows_for(7))
    elif caller == "table of that name in another schema":
        other = Place(place.database if place.database in ("memory", "db2") else "memory",
                      "other", scenario.identifier)
        _table(con, other.sql(), rows_for(8))
        staged.objects[other] = ("table", rows_for(8))
    elif caller == "table of that name in another database":
        other = Place("db2" if place.database != "db2" else "memory", "main", scenario.identifier)
        _table(con, other.sql(), rows_for(9))
        staged.objects[other] = ("table", rows_for(9))
    if caller == "nocase connection":
        con.execute("set default_collation = 'nocase'")
    con.execute("create table memory.other.callers_own (i integer)")
    staged.reads = None if scenario.junk is not None else read_by_duckdb(con, scenario.text, staged)
    if caller == "open transaction":
        con.begin()
        con.execute("insert into memory.other.callers_own values (1)")
    staged.before = snapshot(con)
    if caller == "another thread":
        staged.hold, inside = threading.Event(), threading.Event()

        def hold() -> int:
            inside.set()
            staged.hold.wait(30)
            return 1

        con.create_function("dbt_merge_test_hold", hold, [], "BIGINT", side_effects=True)
        staged.thread = threading.Thread(target=_hold, args=(con,))
        staged.thread.start()
        inside.wait(30)  # the other thread is inside its call: DuckDB refuses this thread's
    return staged


def _hold(con) -> None:
    """The other thread: one call that lasts until released (again while this thread's probe
    is the call DuckDB lets run)."""
    while True:
        try:
            con.sql("select dbt_merge_test_hold()").fetchall()
            return
        except duckdb.ResourceInUseException:
            time.sleep(0.001)


def read_by_duckdb(con, text: str, staged: Staged) -> tuple[Place, str] | None:
    """The staged object DuckDB reads for `select * from <text>` (matched by its rows), with its
    kind; None when DuckDB reads nothing there (no object of that name where it looks, or text
    that is not a name: the test knows which)."""
    try:
        got = sorted(con.sql(f"select id, name, v from {text}").fetchall())
    except (duckdb.Error, TypeError):
        return None
    for place, (kind, rows) in staged.objects.items():
        if sorted(rows) == got:
            return place, kind
    raise AssertionError(f"{text!r} reads rows of no staged object: {got}")


# ------------------------------------------------------------------ the snapshot


def snapshot(con) -> dict:
    """Everything on the connection a call could change: every table's definition and rows (in
    every database, the temporary ones too), views, schemas, databases, sequences, settings,
    the search path, and whether a transaction is open. Reads only, each from a result of its
    own (the connection's current result is the caller's)."""
    def rows(sql: str) -> list[tuple]:
        return con.sql(sql).fetchall()

    tables = {}
    for database, schema, name, sql in rows(
            "select database_name, schema_name, table_name, sql from duckdb_tables() order by all"):
        tables[(database, schema, name)] = (sql, sorted(rows(
            f"select * from {qualified(database, schema, name)}"), key=repr))  # no NaN staged
    ids = "select current_transaction_id()"
    return {
        "tables": tables,
        "views": rows("select database_name, schema_name, view_name, sql from duckdb_views() "
                      "where not internal order by all"),
        "schemas": rows("select database_name, schema_name from duckdb_schemas() order by all"),
        "databases": rows("select database_name, readonly from duckdb_databases() order by all"),
        "sequences": rows("select database_name, schema_name, sequence_name from "
                          "duckdb_sequences() order by all"),
        "settings": rows("select name, value from duckdb_settings() order by name"),
        "search path": rows("select current_database(), current_schema(), "
                            "current_setting('search_path')"),
        "transaction open": rows(ids) == rows(ids),
    }


def differences(before: dict, after: dict) -> list[str]:
    """What changed between two snapshots, readably."""
    found = []
    for key in before:
        if key == "tables":
            for name in sorted(set(before[key]) | set(after[key]), key=repr):
                if before[key].get(name) != after[key].get(name):
                    found.append(f"table {name}: {before[key].get(name)} -> {after[key].get(name)}")
        elif before[key] != after[key]:
            found.append(f"{key}: {before[key]} -> {after[key]}")
    return found
