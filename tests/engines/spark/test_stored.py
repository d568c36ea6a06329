"""Spark: columns and values as the table stores them (issue 21, classes 12-15), over the session
and Thrift methods. One dbt invocation per scenario runs every model of it.

- Column names that start with `#`: every column after one is still compared and written.
- CHAR(n) / VARCHAR(n) columns of parquet and Hive tables: keys match their stored (padded,
  trimmed) value, unchanged CHAR values are not counted updated, a value too long for its column
  is refused with the package's message.
- FLOAT / DOUBLE columns: a value beyond the type's range is refused (Spark's try_cast would
  make it Infinity); an infinity in the SELECT is a value like any other.
- A first build without file_format names its data source in the CREATE, and sets no session
  setting for it.
"""

from __future__ import annotations

import pytest
from dbt_helpers import run_dbt
from support.harness import PROFILES_DIR, make_project, model_sql
from support.scenario import ENGINES, Db, dbt, message, project

SPARK_ENGINES = ENGINES[1:]


def _table(db: Db, schema: str, name: str, ddl: str, values: list[str]) -> None:
    db.engine.setup(schema)
    db.sql(f"drop table if exists {schema}.{name}")
    db.sql(f"create table {schema}.{name} {ddl}")
    db.sql(f"insert into {schema}.{name} values " + ", ".join(values))


def _select(columns: str, rows: list[str]) -> str:
    return " union all ".join(
        f"select {columns.format(*r.split('|'))}" if i == 0 else "select " + r.replace("|", ", ")
        for i, r in enumerate(rows)
    )


@pytest.mark.parametrize("db", SPARK_ENGINES, indirect=True)
def test_columns_named_with_a_hash_are_merged(db, tmp_path):
    """dbt-spark's describe parser stops at `#note`: `amount` was never compared or written."""
    s = f"stored_hash_{db.name}"
    select = _select(
        "cast({} as bigint) as id, cast({} as string) as `#note`, cast({} as double) as amount,"
        " cast({} as string) as `# col_name`",
        ["1|'a2'|1.5|'x'", "2|'b'|2.0|'y'", "3|'c'|3.0|'z'"],
    )
    models = {}
    for fmt, using in (("iceberg", "using iceberg"), ("parquet", "using parquet")):
        ddl = f"(id bigint, `#note` string, amount double, `# col_name` string) {using}"
        _table(db, s, f"h_{fmt}", ddl, ["(1, 'a', 1.0, 'x')", "(2, 'b', 2.0, 'y')"])
        models[f"h_{fmt}"] = ({"schema": s, "unique_key": "id", "file_format": fmt}, select)
    run = dbt(db, project(db, tmp_path, "hash", models), "run")
    for model in models:
        assert "1 inserted, 1 updated, 0 deleted, 1 unchanged, 3 total" in message(run, model), (
            message(run, model))
        assert db.rows(s, model) == [(1, "a2", 1.5, "x"), (2, "b", 2.0, "y"), (3, "c", 3.0, "z")]


BOUNDED = "(k char(5), vk varchar(3), c char(4), v string)"
BOUNDED_COLS = ("cast({} as string) as k, cast({} as string) as vk, cast({} as string) as c,"
                " cast({} as string) as v")


@pytest.mark.parametrize("db", SPARK_ENGINES, indirect=True)
def test_char_and_varchar_columns_compare_as_stored(db, tmp_path):
    s = f"stored_char_{db.name}"
    target = ["('ab', 'ab ', 'x', '1')", "('cd', 'cd', 'y', '2')"]
    stored = [("ab   ", "ab ", "x   ", "1"), ("cd   ", "cd", "y   ", "2")]
    models, outcomes = {}, {}
    for fmt, using in (("parquet", "using parquet"), ("hive", "stored as parquet")):
        cfg = {"schema": s, "file_format": fmt}
        if fmt == "hive":
            cfg["options"] = {"fileFormat": "parquet"}
        # a CHAR key given unpadded; CHAR values unchanged but for their padding
        _table(db, s, f"ck_{fmt}", f"{BOUNDED} {using}", target)
        models[f"ck_{fmt}"] = ({**cfg, "unique_key": "k"}, _select(BOUNDED_COLS, [
            "'ab'|'ab '|'x'|'1'", "'cd'|'cd'|'y'|'22'", "'ef'|'e'|'z'|'3'"]))
        outcomes[f"ck_{fmt}"] = [stored[0], ("cd   ", "cd", "y   ", "22"),
                                 ("ef   ", "e", "z   ", "3")]
        # a VARCHAR(3) key given with trailing spaces beyond 3: stored as 'ab '
        _table(db, s, f"vk_{fmt}", f"{BOUNDED} {using}", target)
        models[f"vk_{fmt}"] = ({**cfg, "unique_key": "vk"}, _select(BOUNDED_COLS, [
            "'ab'|'ab     '|'x'|'1'", "'cd'|'cd'|'y'|'22'", "'ef'|'e'|'z'|'3'"]))
        outcomes[f"vk_{fmt}"] = outcomes[f"ck_{fmt}"]
        # a value too long for its CHAR(4) column (trailing spaces beyond 4 are not too long)
        _table(db, s, f"long_{fmt}", f"{BOUNDED} {using}", target)
        models[f"long_{fmt}"] = ({**cfg, "unique_key": "k"}, _select(BOUNDED_COLS, [
            "'ab'|'ab '|'x       '|'1'", "'cd'|'cd'|'toolong'|'2'"]))
    run = dbt(db, project(db, tmp_path, "char", models), "run")
    for model, rows in outcomes.items():
        assert "1 inserted, 1 updated, 0 deleted, 1 unchanged, 3 total" in message(run, model), (
            model, message(run, model))
        assert db.rows(s, model) == sorted(rows, key=repr), model
    for fmt in ("parquet", "hive"):
        text = message(run, f"long_{fmt}")
        assert (f"dbt_merge: model 'long_{fmt}': column 'c' has 1 value(s) that cannot be stored"
                " in the target's type char(4) (e.g. 'toolong')") in text, text
        assert db.rows(s, f"long_{fmt}") == sorted(stored, key=repr)


@pytest.mark.parametrize("db", SPARK_ENGINES, indirect=True)
def test_values_beyond_a_float_column_are_refused(db, tmp_path):
    """try_cast(1e300 as float) is Infinity in Spark, ANSI on or off: refused like a BIGINT."""
    s = f"stored_float_{db.name}"
    cols = "cast({} as bigint) as id, {} as f, {} as d"
    models = {
        # a DOUBLE beyond FLOAT's range
        "fl_double": _select(cols, ["1|cast(1.0 as double)|cast(1 as double)", "2|1e300|2"]),
        # a string beyond DOUBLE's range
        "fl_string": _select(cols, ["1|cast(1.0 as float)|cast('1' as string)", "2|2|'-1e400'"]),
        # infinities given as such are values
        "fl_inf": _select(cols, ["1|cast('-Infinity' as double)|cast('inf' as string)", "2|2|'2'"]),
    }
    for model in models:
        _table(db, s, model, "(id bigint, f float, d double) using iceberg",
               ["(1, 1.0, 1.0)", "(2, 2.0, 2.0)"])
    cfg = {"schema": s, "unique_key": "id"}
    root = project(db, tmp_path, "float", {m: (cfg, sql) for m, sql in models.items()})
    run = dbt(db, root, "run")
    for model, column, typ, value in (("fl_double", "f", "float", "1.0E300"),
                                      ("fl_string", "d", "double", "-1e400")):
        text = message(run, model)
        assert (f"dbt_merge: model '{model}': column '{column}' has 1 value(s) that cannot be"
                f" stored in the target's type {typ} (e.g. '{value}')") in text, text
        assert db.rows(s, model) == [(1, 1.0, 1.0), (2, 2.0, 2.0)]
    assert "0 inserted, 1 updated, 0 deleted, 1 unchanged, 2 total" in message(run, "fl_inf")
    assert db.rows(s, "fl_inf") == [(1, float("-inf"), float("inf")), (2, 2.0, 2.0)]


@pytest.mark.parametrize("db", SPARK_ENGINES, indirect=True)
def test_a_build_without_file_format_sets_no_session_setting(db, tmp_path):
    """The CREATE names the data source (no USING clause would make a Hive text table): no
    setting is set and put back around it, where another dbt thread's CREATE would see it."""
    s = f"stored_using_{db.name}"
    db.engine.setup(s)
    db.sql(f"drop table if exists {s}.nf")
    sql = model_sql({"schema": s, "unique_key": "id"}, "select cast(1 as bigint) as id, 'a' name")
    root = make_project(tmp_path / f"using_{db.name}", f"using_{db.name}", {"nf": sql})
    statements, logs = [], []

    def collect(event) -> None:
        if event.info.name == "SQLQuery":
            statements.append(event.data.sql)
        if event.info.name == "JinjaLogInfo":
            logs.append(event.info.msg)

    run = run_dbt(["run"], root, db.name, PROFILES_DIR, callbacks=[collect])
    assert "1 inserted" in message(run, "nf"), message(run, "nf")
    assert not [q for q in statements if "createHiveTableByDefault" in q]
    provider = [r for r in db.sql(f"describe table extended {s}.nf") if r[0] == "Provider"]
    assert provider[0][1].strip().lower() == "parquet", provider
    assert db.rows(s, "nf") == [(1, "a")]
    # the model's log says what was built, and that its merges are not atomic, on every run
    said = "nf: no file_format is set: the table is built as a parquet table (spark.sql.sources"
    assert [line for line in logs if said in line and "not atomic" in line], logs
    logs.clear()
    run = run_dbt(["run"], root, db.name, PROFILES_DIR, callbacks=[collect])
    assert "0 inserted" in message(run, "nf"), message(run, "nf")
    assert [line for line in logs if "nf: no file_format is set: the table is a parquet table"
            in line and "not atomic" in line], logs


#: a redaction regex of the user's that hides the values the package reads with SET: the
#: session's default data source, and every boolean set to true
REDACTING = r"(?i)sources\.default|^true$"


@pytest.mark.parametrize("db", SPARK_ENGINES, indirect=True)
def test_settings_the_session_shows_redacted_are_not_guessed_or_written_back(db, tmp_path):
    """spark.sql.redaction.options.regex hides values the merge reads with SET. A build without
    file_format (a first one, and a full refresh of a parquet table) is refused before anything
    is made, the old table kept (before: `using *********(redacted)`, Spark's parse error, after
    the full refresh had dropped the parquet table); a large SELECT is cached with the session's
    compression left as it is (before: the redacted text "put back", Spark's `should be
    boolean`). In-process the regex is the session's (read by the early format check); over
    thrift a pre-hook sets it on the model's connection (read where the table is built)."""
    s = f"stored_redacted_{db.name}"
    db.engine.setup(s)
    for name in ("rd_new", "rd_old", "rd_big"):
        db.sql(f"drop table if exists {s}.{name}")
    db.sql(f"create table {s}.rd_old (id bigint, name string) using parquet")
    db.sql(f"insert into {s}.rd_old values (1, 'a')")
    db.sql(f"create table {s}.rd_big (id bigint, name string) using iceberg")
    db.sql(f"insert into {s}.rd_big values (1, 'a')")
    hook = {"pre_hook": f"set spark.sql.redaction.options.regex={REDACTING}"} \
        if db.name == "spark_thrift" else {}
    select = ("select cast(id as bigint) as id, concat('n', cast(id as string)) as name "
              "from range(1, 3)")
    models = {name: model_sql({"schema": s, "unique_key": "id", **hook, **extra}, select)
              for name, extra in (("rd_new", {}), ("rd_old", {}),
                                  ("rd_big", {"file_format": "iceberg"}))}
    root = make_project(tmp_path / f"redacted_{db.name}", f"redacted_{db.name}", models)
    session = db.engine.spark if db.name == "spark" else None
    if session is not None:
        session.conf.set("spark.sql.redaction.options.regex", REDACTING)
    try:
        built = run_dbt(["run", "--full-refresh", "-s", "rd_new", "rd_old"], root, db.name,
                        PROFILES_DIR)
        merged = run_dbt(["run", "-s", "rd_big"], root, db.name, PROFILES_DIR,
                         vars={"dbt_merge_spark_uncompressed_cache_bytes": 0})
    finally:
        if session is not None:
            session.conf.unset("spark.sql.redaction.options.regex")
    for model in ("rd_new", "rd_old"):
        said = message(built, model)
        assert "no file_format is set, so the table is built as the session's default " \
               "data source (spark.sql.sources.default), which this session shows redacted" in said
        assert "The target was not changed" in said, said
    assert db.rows(s, "rd_old") == [(1, "a")]
    assert not [r for r in db.sql(f"show tables in {s} like 'rd_new'")]
    assert "1 inserted, 1 updated, 0 deleted, 0 unchanged, 2 total" in message(merged, "rd_big")
    assert db.rows(s, "rd_big") == [(1, "n1"), (2, "n2")]
    if session is not None:  # the compression setting was not touched
        key = "spark.sql.inMemoryColumnarStorage.compressed"
        assert [tuple(r) for r in db.sql(f"set {key}")] == [(key, "true")]


@pytest.mark.parametrize("db", SPARK_ENGINES, indirect=True)
def test_the_staged_select_is_cached_uncompressed_and_the_setting_put_back(db, tmp_path):
    """An incremental run caches a small staged SELECT as the session compresses caches (one
    statement, no setting touched); one Spark estimates at dbt_merge_spark_uncompressed_cache_bytes
    or more is uncached again and cached with compression off for that statement only (cache_lazy:
    a compressed cache of a large SELECT cost more than it saved), and the session's value put
    back."""
    key = "spark.sql.inMemoryColumnarStorage.compressed"
    s = f"stored_cache_{db.name}"
    db.engine.setup(s)
    db.sql(f"drop table if exists {s}.cz")
    sql = model_sql({"schema": s, "unique_key": "id", "file_format": "iceberg"},
                    "select cast(1 as bigint) as id, 'a' name")
    root = make_project(tmp_path / f"cache_{db.name}", f"cache_{db.name}", {"cz": sql})
    assert "1 inserted" in message(run_dbt(["run"], root, db.name, PROFILES_DIR), "cz")
    statements = []

    def collect(event) -> None:
        if event.info.name == "SQLQuery":
            statements.append(" ".join(event.data.sql.split()[-3:]))

    run = run_dbt(["run"], root, db.name, PROFILES_DIR, callbacks=[collect])
    assert "1 unchanged" in message(run, "cz"), message(run, "cz")
    cache = [i for i, q in enumerate(statements) if q.startswith("lazy table cz__dbt_merge_")]
    assert len(cache) == 1, statements
    assert not [q for q in statements if key in q], statements
    statements.clear()
    run = run_dbt(["run"], root, db.name, PROFILES_DIR, callbacks=[collect],
                  vars={"dbt_merge_spark_uncompressed_cache_bytes": 0})
    assert "1 unchanged" in message(run, "cz"), message(run, "cz")
    cache = [i for i, q in enumerate(statements) if q.startswith("lazy table cz__dbt_merge_")]
    assert len(cache) == 2, statements
    i = cache[1]
    # uncache table if exists ..., then the setting read, set, the cache, put back
    assert statements[i - 3].startswith("if exists cz__dbt_merge_"), statements[i - 3:i + 2]
    assert statements[i - 1].endswith(f"{key}=false"), statements[i - 3:i + 2]
    assert statements[i + 1].endswith(f"{key}=true"), statements[i - 3:i + 2]
    if db.name == "spark":  # the test's session is dbt's; a Thrift connection has its own
        assert [tuple(r) for r in db.sql(f"set {key}")] == [(key, "true")]


@pytest.mark.parametrize("db", SPARK_ENGINES, indirect=True)
def test_a_non_deterministic_select_with_old_dates_and_odd_names(db, tmp_path):
    """A SELECT with rand() is copied once to a work table and merged from there: a date before
    1582 is written to it as it is (no INCONSISTENT_BEHAVIOR_CROSS_VERSION from Spark's calendar
    rebase, no folder left in the warehouse), and a column named with a backtick keeps its values
    (an ORC copy read it back as NULL); the session's rebase settings are as they were."""
    s = f"stored_nondet_{db.name}"
    _table(db, s, "nd", "(id bigint, d date, `back``tick` decimal(18, 3), r double) using iceberg",
           ["(1, date'2000-01-01', 1.000, -1.0)"])
    key = "spark.sql.parquet.datetimeRebaseModeInWrite"
    before = db.sql(f"set {key}")
    select = ("select cast(id as bigint) as id, date'1400-01-01' as d, "
              "cast(id / 1000 as decimal(18, 3)) as `back``tick`, rand() as r from range(1, 4)")
    root = project(db, tmp_path, "nondet", {"nd": ({"schema": s, "unique_key": "id"}, select)})
    run = dbt(db, root, "run")
    assert "2 inserted, 1 updated, 0 deleted, 0 unchanged, 3 total" in message(run, "nd"), \
        message(run, "nd")
    rows = sorted((r[0], str(r[1]), str(r[2])) for r in db.rows(s, "nd"))
    assert rows == [(1, "1400-01-01", "0.001"), (2, "1400-01-01", "0.002"),
                    (3, "1400-01-01", "0.003")]
    assert [t for t in db.tables(s) if "__dbt_merge" in t] == []
    assert db.sql(f"set {key}") == before
