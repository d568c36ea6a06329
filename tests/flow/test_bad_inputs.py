"""Every entry of the bad-input catalogue fails with its message and leaves the target as it was;
identifiers that are merely unusual (reserved words, mixed case, spaces, quotes, SQL-looking
names) merge correctly. One dbt invocation per engine runs the whole catalogue."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from dbt_helpers import run_dbt
from support.catalogue import CATALOGUE, SOURCE_ROWS, TARGET_COLS, TARGET_ROWS, Bad
from support.harness import (
    PROFILES_DIR,
    DuckEngine,
    SparkEngine,
    ThriftEngine,
    make_project,
    model_sql,
)
from support.reference import Options, OrderTerm, canonical, merge

DOCS = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
SCHEMA = "rel_bad"

# ------------------------------------------------------------- identifiers that must work

T0 = TARGET_ROWS[0]["updated_at"]
WEIRD_COLS = [
    ("select", "int"),
    ("Mixed Case", "str"),
    ("it's", "str"),
    ('say "hi"', "float"),
    ('x"; drop table t; --', "str"),
    ("from", "ts"),
    ("order", "int"),
    ("back`tick", "str"),
]
WEIRD_TARGET = [
    {
        "select": 1,
        "Mixed Case": "A",
        "it's": "x",
        'say "hi"': 1.0,
        'x"; drop table t; --': "'; drop table t; --",
        "from": T0,
        "order": 1,
        "back`tick": "`",
    },
    {
        "select": 1,
        "Mixed Case": "a",
        "it's": "y",
        'say "hi"': 2.0,
        'x"; drop table t; --': None,
        "from": T0,
        "order": 1,
        "back`tick": None,
    },
    {
        "select": 2,
        "Mixed Case": "A",
        "it's": "z",
        'say "hi"': None,
        'x"; drop table t; --': "",
        "from": None,
        "order": 2,
        "back`tick": "a",
    },
]
WEIRD_SOURCE = [
    {**WEIRD_TARGET[0], "it's": "x2", 'x"; drop table t; --': '"quoted"'},
    {**WEIRD_TARGET[0], "it's": "older", "order": 0},  # loses the dedup to the row above
    {**WEIRD_TARGET[1]},
    {
        "select": 3,
        "Mixed Case": "MIXED",
        "it's": "new",
        'say "hi"': -0.5,
        'x"; drop table t; --': "`;`",
        "from": T0,
        "order": None,
        "back`tick": "``",
    },
]
WEIRD_KEY = ["select", "Mixed Case"]
WEIRD_MODELS = {
    # model: (strategy, options, source rows)
    "w_upsert": ("upsert", Options(), [WEIRD_SOURCE[0], WEIRD_SOURCE[2], WEIRD_SOURCE[3]]),
    "w_dedupe": ("deduplicate", Options(dedup_order_by=[OrderTerm("order", True)]), WEIRD_SOURCE),
    "w_full": (
        "full_merge",
        Options(update_columns=["it's", 'x"; drop table t; --'], max_delete_fraction=1),
        [WEIRD_SOURCE[0], WEIRD_SOURCE[3]],
    ),
}


def _weird_config(strategy: str, opts: Options) -> dict:
    cfg: dict = {"strategy": strategy, "unique_key": WEIRD_KEY}
    if opts.dedup_order_by:
        cfg["dedup_order_by"] = [
            t.column + (" desc" if t.descending else "") for t in opts.dedup_order_by
        ]
    if opts.update_columns is not None:
        cfg["merge_update_columns"] = opts.update_columns
    if opts.max_delete_fraction is not None:
        cfg["max_delete_fraction"] = opts.max_delete_fraction  # w_full deletes 2 of 3 rows
    return cfg


# ------------------------------------------------------------- one run per engine


def _run(engine, tmp: Path):
    src = SCHEMA + "_src"
    engine.setup(SCHEMA, src)
    models = {}
    for bad in CATALOGUE:
        if engine.dialect not in bad.engines:
            continue
        name = f"b_{bad.id}"
        engine.create(SCHEMA, name, bad.target_cols, bad.target_rows)
        source = engine.source(src, f"s_{bad.id}", bad.source_cols, bad.source_rows)
        cfg = {**bad.config, "schema": SCHEMA}
        if engine.dialect == "spark" and "file_format" not in cfg:
            cfg["file_format"] = "iceberg"
        cfg = {k: v for k, v in cfg.items() if v is not None}
        models[name] = model_sql(cfg, bad.select_sql(engine.dialect, source))
    for name, (strategy, opts, rows) in WEIRD_MODELS.items():
        engine.create(SCHEMA, name, WEIRD_COLS, WEIRD_TARGET)
        source = engine.source(src, f"s_{name}", WEIRD_COLS, rows)
        cfg = {**_weird_config(strategy, opts), "schema": SCHEMA}
        if engine.dialect == "spark":
            cfg["file_format"] = "iceberg"
        models[name] = model_sql(cfg, f"select * from {source}")
    project = make_project(tmp / f"bad_{engine.name}", f"bad_{engine.name}", models)
    return engine, run_dbt(["run"], project, engine.name, PROFILES_DIR)


@pytest.fixture(scope="module")
def duckdb_run(tmp_path_factory):
    with DuckEngine() as engine:
        yield _run(engine, tmp_path_factory.mktemp("bad"))


@pytest.fixture(scope="module")
def spark_run(spark, tmp_path_factory):
    return _run(SparkEngine(spark), tmp_path_factory.mktemp("bad"))


@pytest.fixture(scope="module")
def thrift_run(thrift, tmp_path_factory):
    return _run(ThriftEngine(thrift), tmp_path_factory.mktemp("bad"))


def _check_bad(engine, run, bad: Bad) -> None:
    model = f"b_{bad.id}"
    message = " ".join(run.error(model).split())
    if bad.ours:
        assert f"dbt_merge: model '{model}': " in message, message
    assert bad.excerpt(engine.dialect) in message, message
    names, rows = engine.rows(SCHEMA, model)
    assert names == [c for c, _ in bad.target_cols]
    assert canonical(rows, names) == canonical(bad.target_rows, names), "target changed"


def _assert_like_reference(engine, run, schema: str, model: str, names, expected, stats) -> None:
    """The model's statistics and table are the reference merge's."""
    assert run.stats(model) == stats.as_dict(), model
    got_names, got = engine.rows(schema, model)
    assert got_names == names, model
    assert canonical(got, names) == canonical(expected, names), (model, got)


def _check_weird(engine, run) -> None:
    names = [c for c, _ in WEIRD_COLS]
    for model, (strategy, opts, rows) in WEIRD_MODELS.items():
        expected, stats = merge(strategy, rows, WEIRD_TARGET, WEIRD_KEY, opts)
        _assert_like_reference(engine, run, SCHEMA, model, names, expected, stats)


@pytest.mark.parametrize("bad", [b for b in CATALOGUE if "duckdb" in b.engines], ids=lambda b: b.id)
def test_bad_input_duckdb(duckdb_run, bad):
    _check_bad(*duckdb_run, bad)


@pytest.mark.spark
@pytest.mark.parametrize("bad", [b for b in CATALOGUE if "spark" in b.engines], ids=lambda b: b.id)
def test_bad_input_spark(spark_run, bad):
    _check_bad(*spark_run, bad)


@pytest.mark.spark
@pytest.mark.thrift
@pytest.mark.parametrize("bad", [b for b in CATALOGUE if "spark" in b.engines], ids=lambda b: b.id)
def test_bad_input_thrift(thrift_run, bad):
    _check_bad(*thrift_run, bad)


def test_unusual_identifiers_work_duckdb(duckdb_run):
    _check_weird(*duckdb_run)


@pytest.mark.spark
def test_unusual_identifiers_work_spark(spark_run):
    _check_weird(*spark_run)


@pytest.mark.spark
@pytest.mark.thrift
def test_unusual_identifiers_work_thrift(thrift_run):
    _check_weird(*thrift_run)


def test_docs_table_lists_the_catalogue():
    """docs/errors.md has one table row per catalogue entry, with its message excerpt."""
    text = DOCS.read_text()
    for bad in CATALOGUE:
        assert re.search(rf"<a id=\"{bad.id}\"></a>", text), f"{bad.id} missing from {DOCS}"
        for excerpt in {bad.excerpt(e) for e in bad.engines}:
            assert excerpt.replace("|", "\\|") in text, f"{bad.id}: {excerpt!r} not in {DOCS}"


# ------------------------------------------------------------- target rows with a NULL key

NULL_KEY_COLS = [("k1", "int"), ("k2", "str"), ("v", "str")]
NULL_KEY_TARGET = [
    {"k1": 1, "k2": "a", "v": "old"},
    {"k1": None, "k2": "a", "v": "null k1"},
    {"k1": 2, "k2": None, "v": "null k2"},
    {"k1": 3, "k2": "c", "v": "gone"},
]
NULL_KEY_SOURCE = [{"k1": 1, "k2": "a", "v": "new"}, {"k1": 4, "k2": "d", "v": "ins"}]


def _null_key_target(engine, tmp: Path) -> None:
    """A table created outside the package may hold rows with a NULL key. They can match no
    source row: every strategy keeps them as they are (full_merge too) and counts nothing."""
    schema = "rel_nullkey"
    engine.setup(schema, schema + "_src")
    source = engine.source(schema + "_src", "s", NULL_KEY_COLS, NULL_KEY_SOURCE)
    models = {}
    for strategy in ("upsert", "insert", "update", "full_merge", "deduplicate"):
        engine.create(schema, f"n_{strategy}", NULL_KEY_COLS, NULL_KEY_TARGET)
        cfg = {"strategy": strategy, "unique_key": ["k1", "k2"], "schema": schema}
        if engine.dialect == "spark":
            cfg["file_format"] = "iceberg"
        models[f"n_{strategy}"] = model_sql(cfg, f"select * from {source}")
    project = make_project(tmp / f"nullkey_{engine.name}", f"nullkey_{engine.name}", models)
    run = run_dbt(["run"], project, engine.name, PROFILES_DIR)
    names = [c for c, _ in NULL_KEY_COLS]
    for strategy in ("upsert", "insert", "update", "full_merge", "deduplicate"):
        model = f"n_{strategy}"
        expected, stats = merge(strategy, NULL_KEY_SOURCE, NULL_KEY_TARGET, ["k1", "k2"])
        _assert_like_reference(engine, run, schema, model, names, expected, stats)


def test_target_rows_with_null_key_duckdb(tmp_path):
    with DuckEngine() as engine:
        _null_key_target(engine, tmp_path)


@pytest.mark.spark
def test_target_rows_with_null_key_spark(spark, tmp_path):
    _null_key_target(SparkEngine(spark), tmp_path)


@pytest.mark.spark
@pytest.mark.thrift
def test_target_rows_with_null_key_thrift(thrift, tmp_path):
    _null_key_target(ThriftEngine(thrift), tmp_path)


# ------------------------------------------------- key types that differ only in width or scale

#: The SELECT's key in another type of the same family as the table's BIGINT key: allowed
#: (check_key_types refuses only a different family, e.g. a string, see `type_mismatch_key`).
KEY_CASTS = {"kt_int32": "cast(id as integer)", "kt_decimal": "cast(id as decimal(18, 0))"}


def _same_family_keys(engine, tmp: Path) -> None:
    schema = "rel_keytypes"
    engine.setup(schema, schema + "_src")
    source = engine.source(schema + "_src", "s", TARGET_COLS, SOURCE_ROWS)
    models = {}
    for name, key in KEY_CASTS.items():
        engine.create(schema, name, TARGET_COLS, TARGET_ROWS)
        cfg = {"strategy": "upsert", "unique_key": "id", "schema": schema}
        if engine.dialect == "spark":
            cfg["file_format"] = "iceberg"
        models[name] = model_sql(cfg, f"select {key} as id, name, amount, updated_at from {source}")
    project = make_project(tmp / f"keytypes_{engine.name}", f"keytypes_{engine.name}", models)
    run = run_dbt(["run"], project, engine.name, PROFILES_DIR)
    expected, stats = merge("upsert", SOURCE_ROWS, TARGET_ROWS, ["id"])
    names = [c for c, _ in TARGET_COLS]
    for name in KEY_CASTS:
        _assert_like_reference(engine, run, schema, name, names, expected, stats)


def test_same_family_key_types_merge_duckdb(tmp_path):
    with DuckEngine() as engine:
        _same_family_keys(engine, tmp_path)


@pytest.mark.spark
def test_same_family_key_types_merge_spark(spark, tmp_path):
    _same_family_keys(SparkEngine(spark), tmp_path)


@pytest.mark.spark
@pytest.mark.thrift
def test_same_family_key_types_merge_thrift(thrift, tmp_path):
    _same_family_keys(ThriftEngine(thrift), tmp_path)
