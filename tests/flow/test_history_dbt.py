"""strategy='history' against `dbt snapshot`, in one dbt project, on DuckDB and Spark (Iceberg).

For every hard_deletes mode and both validity sources (updated_at: dbt's timestamp strategy;
none: its check strategy), a snapshot and a merge model of the same SELECT with the same config
run over the same sequence of source states, one `dbt build` per state (snapshots and models in
one invocation). After each state both tables must hold the same rows, every column included:
the SELECT's, dbt_updated_at, dbt_valid_from, dbt_valid_to, dbt_is_deleted, and dbt_scd_id where
it does not hash a run's time. Times of the clock differ between the two (each run reads its own
clock): a time no source holds stands for the run that wrote it, in each table alike, and
dbt_scd_id that hashes one (check strategy, deletion records) is compared as "an md5 of the key
and that run's time" in each table. The sequence keeps to what dbt snapshots write soundly: a
key returns with an updated_at after its deletion (dbt would otherwise write a version that
overlaps the closed one, see docs/history.md). A late row (older than its key's current
version) is in it: dbt ignores it silently, the model holds it back and counts it, and the two
tables agree. On Spark, dbt-spark writes a new_record deletion record with NULL in every
column of the SELECT (its key too, so it never closes); for that mode the versions of the data
are compared there, not the deletion records.

Also, on DuckDB, the model's refusals and reports through dbt: the console line and
run_results.json's adapter_response, the merge_history_table row, `--full-refresh` refused
unless full_refresh=true, and the dbt_merge.current_unique test on both tables (every state's
dbt build runs it on each snapshot's table and each model's, on DuckDB).
"""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest
import yaml
from dbt_helpers import run_dbt
from support.harness import PROFILES_DIR, ROOT, DuckEngine, SparkEngine, make_project, model_sql

SCHEMA = "hist_cmp"
SOURCE = [("id", "int"), ("v", "str"), ("w", "int"), ("u", "ts")]
D = [dt.datetime(2024, 1, d) for d in range(1, 6)]
F = [dt.datetime(2100, 1, 1, h) for h in range(1, 4)]


def row(i, v, w, u):
    return {"id": i, "v": v, "w": w, "u": u}


#: the source states, in order
STATES = [
    [row(1, "a", 1, D[0]), row(2, "b", 1, D[0]), row(3, "c", 1, D[0])],
    # 1 changes, 2 leaves, 3 stays, 4 is new
    [row(1, "a2", 1, D[1]), row(3, "c", 1, D[0]), row(4, "d", 1, D[1])],
    # 1 late (older than its current version), 2 comes back (after its deletion), 3 changes w
    [row(1, "a0", 1, D[0]), row(2, "b", 1, F[0]), row(3, "c", 2, D[2]), row(4, "d", 1, D[1])],
    # 3 leaves, 4 changes
    [row(1, "a0", 1, D[0]), row(2, "b", 1, F[0]), row(4, "e", 1, D[3])],
    # 3 comes back
    [row(1, "a0", 1, D[0]), row(2, "b", 1, F[0]), row(3, "c", 2, F[1]), row(4, "e", 1, D[3])],
]
MODES = ["ignore", "invalidate", "new_record"]
VALIDITY = {"ts": {"updated_at": "u"}, "ck": {}}


def pairs():
    return [(mode, validity) for mode in MODES for validity in VALIDITY]


#: dbt-spark's snapshot refuses its own Iceberg table on Spark's session catalog after its first
#: run (it reads `Provider: hive`); the project tells it the table is Iceberg (the macro's file).
SNAPSHOT_ICEBERG = ROOT / "benchmarks" / "snapshot_iceberg.sql"


def project(tmp_path, engine):
    models, snapshots = {}, []
    extra = {"file_format": "iceberg"} if engine.dialect == "spark" else {}
    for mode, validity in pairs():
        name = f"{mode}_{validity}"
        snap = {"unique_key": "id", "hard_deletes": mode, "schema": SCHEMA, **extra}
        snap.update(
            {"strategy": "timestamp", "updated_at": "u"}
            if validity == "ts"
            else {"strategy": "check", "check_cols": ["v", "w"]}
        )
        snapshots.append(
            {"name": f"snap_{name}", "relation": "source('src', 'src')", "config": snap}
        )
        if engine.dialect == "duckdb":  # the generic test on a snapshot's table (and ours, below)
            snapshots[-1]["data_tests"] = ["dbt_merge.current_unique"]
        cfg = {
            "strategy": "history",
            "unique_key": "id",
            "hard_deletes": mode,
            "schema": SCHEMA,
            "max_delete_fraction": 1,
            **VALIDITY[validity],
            **extra,
        }
        if validity == "ck":
            cfg["check_cols"] = ["v", "w"]
        models[f"model_{name}"] = model_sql(cfg, "select * from {{ source('src', 'src') }}")
    yml = {"sources": [{"name": "src", "schema": SCHEMA + "_src", "tables": [{"name": "src"}]}]}
    if engine.dialect == "duckdb":
        yml["models"] = [{"name": m, "data_tests": ["dbt_merge.current_unique"]} for m in models]
    root = make_project(tmp_path / f"hist_{engine.name}", f"hist_{engine.name}", models, None, yml)
    if engine.dialect == "spark":
        (root / "macros" / "snapshot_iceberg.sql").write_text(SNAPSHOT_ICEBERG.read_text())
    (root / "snapshots").mkdir(exist_ok=True)
    (root / "snapshots" / "snaps.yml").write_text(yaml.safe_dump({"snapshots": snapshots}))
    return root


def is_clock(value) -> bool:
    return isinstance(value, dt.datetime) and 2025 <= value.year < 2090


def normalized(rows: list[dict], labels: dict) -> list[tuple]:
    """Rows with each clock time as the label of the state that first wrote it ('T2'), and a
    dbt_scd_id hashing one as 'md5(<its parts>)'. `labels` carries the table's clock times to
    their labels from state to state (filled by the caller)."""
    out = []
    for r in rows:
        values = {k: labels.get(v, v) if is_clock(v) else v for k, v in r.items()}
        clocked = any(is_clock(r[c]) for c in ("dbt_valid_from",))
        if clocked:  # its id hashes the clock: its own key and time, or (a deletion record) an id
            values["dbt_scd_id"] = "md5(clock)"
        out.append(tuple(sorted((k, repr(v)) for k, v in values.items())))
    return sorted(out)


def label_clock(rows: list[dict], labels: dict, step: int) -> None:
    new = {v for r in rows for v in r.values() if is_clock(v)} - set(labels)
    assert len(new) <= 1, f"state {step}: more than one new time of the clock: {sorted(new)}"
    for v in new:
        labels[v] = f"T{step}"


def check_ids(rows: list[dict], spark: bool) -> None:
    """Every dbt_scd_id not hashing the clock is md5 of its key and dbt_valid_from."""
    for r in rows:
        if not is_clock(r["dbt_valid_from"]):
            text = f"{r['id']}|{r['dbt_valid_from'].strftime('%Y-%m-%d %H:%M:%S')}"
            assert r["dbt_scd_id"] == hashlib.md5(text.encode()).hexdigest(), r


def compare_with_snapshots(engine, tmp_path) -> None:
    engine.setup(SCHEMA, SCHEMA + "_src")
    root = project(tmp_path, engine)
    labels = {f"{m}_{v}": ({}, {}) for m, v in pairs()}
    # on Spark the last state (a second key coming back) is left out: key 2 comes back already,
    # and each state is a dbt build of twelve nodes
    for step, state in enumerate(STATES if engine.dialect != "spark" else STATES[:-1]):
        engine.create(SCHEMA + "_src", "src", SOURCE, state)
        run = run_dbt(["build", "--threads", "4"], root, engine.name, PROFILES_DIR)
        assert run.success, [(r.node.name, r.message) for r in run.results if r.status != "success"]
        if engine.dialect == "duckdb":  # dbt_merge.current_unique ran on every table, and passed
            assert sum(r.node.resource_type == "test" for r in run.results) == 12
        for mode, validity in pairs():
            name = f"{mode}_{validity}"
            snap = engine.rows(SCHEMA, f"snap_{name}")
            ours = engine.rows(SCHEMA, f"model_{name}")
            assert snap[0] == ours[0], f"{name}: columns {snap[0]} != {ours[0]}"
            snap_labels, our_labels = labels[name]
            label_clock(snap[1], snap_labels, step)
            label_clock(ours[1], our_labels, step)
            check_ids(snap[1], engine.dialect == "spark")
            check_ids(ours[1], engine.dialect == "spark")
            snap_rows, our_rows = snap[1], ours[1]
            if engine.dialect == "spark" and mode == "new_record":
                # dbt-spark 1.11 writes its deletion records with NULL in every column of the
                # SELECT, the key included (so they never close): compared are the versions of
                # the data alone (docs/history.md)
                snap_rows = [r for r in snap_rows if r["dbt_is_deleted"] != "True"]
                our_rows = [r for r in our_rows if r["dbt_is_deleted"] != "True"]
            a, b = normalized(snap_rows, snap_labels), normalized(our_rows, our_labels)
            assert a == b, f"state {step}, {name}:\n  snapshot: {a}\n  model:    {b}"
        if step == 2:  # the late row: dbt ignores it, the model holds it back (timestamp strategy)
            message = run.result("model_ignore_ts").adapter_response["_message"]
            assert "1 held back" in message, message


def test_history_writes_what_dbt_snapshot_writes_on_duckdb(tmp_path):
    with DuckEngine() as engine:
        compare_with_snapshots(engine, tmp_path)


@pytest.mark.spark
def test_history_writes_what_dbt_snapshot_writes_on_spark(spark, tmp_path):
    compare_with_snapshots(SparkEngine(spark), tmp_path)


def test_a_history_model_through_dbt_on_duckdb(tmp_path):
    """The console line and run_results.json, merge_history_table's row, --full-refresh refused
    unless full_refresh=true, and dbt_merge.current_unique on a sound and a broken table."""
    with DuckEngine() as engine:
        engine.setup(SCHEMA, SCHEMA + "_src")
        base = {
            "strategy": "history",
            "unique_key": "id",
            "updated_at": "u",
            "schema": SCHEMA,
            "hard_deletes": "invalidate",
            "max_delete_fraction": 1,
            "merge_history_table": "merge_log",
        }
        select = "select * from {{ source('src', 'src') }}"
        models = {
            "kept": model_sql(base, select),
            "rebuilt": model_sql({**base, "full_refresh": True}, select),
        }
        yml = {
            "sources": [{"name": "src", "schema": SCHEMA + "_src", "tables": [{"name": "src"}]}],
            "models": [{"name": "kept", "data_tests": ["dbt_merge.current_unique"]}],
        }
        root = make_project(tmp_path / "hist_dbt", "hist_dbt", models, None, yml)
        engine.create(SCHEMA + "_src", "src", SOURCE, STATES[0])
        # merge_log as release 0.1.0 made it (no column `versions`), shared by the two models
        # at once: the column is added before their transactions (red team duck2: each added
        # it inside its own, and one failed with `Catalog write-write conflict on alter`)
        engine.con.execute(f"drop table if exists {SCHEMA}.merge_log")
        engine.con.execute(
            f"create table {SCHEMA}.merge_log (model_unique_id varchar, strategy varchar, "
            "invocation_id varchar, started_at timestamp, finished_at timestamp, inserted "
            "bigint, updated bigint, deleted bigint, unchanged bigint, held_back bigint, "
            "total bigint)")
        run = run_dbt(["run", "--threads", "4"], root, "duckdb", PROFILES_DIR)
        assert run.success, [r.message for r in run.results]
        engine.create(SCHEMA + "_src", "src", SOURCE, STATES[1])
        run = run_dbt(["run"], root, "duckdb", PROFILES_DIR)
        response = run.result("kept").adapter_response
        assert response["_message"] == (
            "MERGE history: 1 inserted, 1 updated, 1 deleted, 1 unchanged, "
            "3 total, 0 held back, 5 versions"
        )
        assert response["code"] == "MERGE" and response["rows_affected"] == 3
        log = engine.con.execute(
            f"select inserted, updated, deleted, unchanged, held_back, total, "
            f"versions from {SCHEMA}.merge_log where model_unique_id like '%kept' "
            "order by started_at"
        ).fetchall()
        assert log == [(3, 0, 0, 0, 0, 3, 3), (1, 1, 1, 1, 0, 3, 5)]

        before = engine.rows(SCHEMA, "kept")
        run = run_dbt(["run", "--full-refresh"], root, "duckdb", PROFILES_DIR)
        assert "--full-refresh would rebuild the history table" in run.error("kept")
        assert "losing every past version" in run.error("kept")
        assert engine.rows(SCHEMA, "kept") == before
        assert str(run.result("rebuilt").status) == "success"
        assert len(engine.rows(SCHEMA, "rebuilt")[1]) == 3  # rebuilt: one version per row

        assert run_dbt(["test"], root, "duckdb", PROFILES_DIR).success
        engine.con.execute(
            f"insert into {SCHEMA}.kept select id, 'z', w, u, 'x', dbt_updated_at, "
            f"dbt_valid_from, null from {SCHEMA}.kept where id = 1 and dbt_valid_to is null"
        )
        test = run_dbt(["test"], root, "duckdb", PROFILES_DIR)
        assert not test.success
        assert test.results[0].failures == 2  # both current versions of key 1


@pytest.mark.spark
def test_another_writer_between_the_counts_and_the_merge_is_refused(spark, tmp_path):
    """A history merge on Iceberg (copy-on-write, and merge-on-read of format 3) whose table gets
    another writer's commit after the counts, in this session ('between': the snapshot guard)
    or from another session ('during': Iceberg's validation, or the guard): refused, nothing of
    it committed, the other writer's row kept."""
    schema = "hist_race"
    spark.sql(f"create database if not exists {schema}")
    kinds = {
        "cow": {},
        "mor": {
            "format-version": "3",
            "write.merge.mode": "merge-on-read",
            "write.update.mode": "merge-on-read",
        },
    }
    models = {}
    for kind, properties in kinds.items():
        for point in ("between", "during"):
            cfg = {
                "strategy": "history",
                "unique_key": "id",
                "updated_at": "u",
                "hard_deletes": "invalidate",
                "max_delete_fraction": 1,
                "schema": schema,
                "file_format": "iceberg",
                **({"tblproperties": properties} if properties else {}),
            }
            models[f"{kind}__{point}"] = model_sql(cfg, f"select * from {schema}.src")
    root = make_project(tmp_path / "race", "hist_race", models)
    engine = SparkEngine(spark)
    engine.create(schema, "src", SOURCE, STATES[0])
    assert run_dbt(["run"], root, "spark", PROFILES_DIR).success
    engine.create(schema, "src", SOURCE, STATES[1])
    other = spark.newSession()
    fired = {}
    extra = (
        "(9, 'other', 1, timestamp '2024-01-01', 'x', timestamp '2024-01-01', "
        "timestamp '2024-01-01', null)"
    )

    def writer(event) -> None:
        if event.info.name != "SQLQuery":
            return
        name = event.data.node_info.node_name
        sql = " ".join(event.data.sql.split()).lower()
        if name in models and name not in fired and "merge into" in sql:
            session = other if name.endswith("during") else spark
            session.sql(f"insert into {schema}.{name} values {extra}")
            fired[name] = True

    before = {name: sorted(map(repr, engine.rows(schema, name)[1])) for name in models}
    run = run_dbt(["run", "--threads", "1"], root, "spark", PROFILES_DIR, callbacks=[writer])
    problems = []
    for name in models:
        spark.sql(f"refresh table {schema}.{name}")
        message = run.result(name).message or ""
        rows = engine.rows(schema, name)[1]
        if name not in fired or str(run.result(name).status) != "error":
            problems.append(f"{name}: not refused: {run.result(name).status} {message[:300]}")
            continue
        ours = "after this run counted its changes on snapshot" in message
        if not (ours or (name.endswith("during") and "ValidationException" in message)):
            problems.append(f"{name}: message {message[:400]}")
        kept = sorted(repr(r) for r in rows if r["id"] != 9)
        if kept != before[name] or sum(r["id"] == 9 for r in rows) != 1:
            problems.append(f"{name}: the table changed: {rows}")
    assert not problems, "\n".join(problems)


@pytest.mark.spark
def test_a_refused_full_refresh_keeps_an_unfinished_write_on_spark(spark, tmp_path, monkeypatch):
    """A history model on a parquet table whose run stopped in its INSERT OVERWRITE after Spark
    deleted the table's files (what a kill there leaves: the table empty, its rows in the work
    table marked ready). `dbt run --full-refresh` is refused by the history guard before anything
    is touched, and a rebuild refused on the way (full_refresh=True, a repeated key) keeps the
    work table too; the next run finishes the write and merges: every version is there. (On
    main, the refused --full-refresh dropped the work table: the next run found an empty history
    and wrote 3 versions, the first one gone.)"""
    import dbt.adapters.spark.session as dbt_spark_session
    from dbt_merge.errors import MergeError
    from dbt_merge.spark.api import merge_dataframe

    schema = "hist_unfinished"
    engine = SparkEngine(spark)
    engine.setup(schema)
    engine.drop(schema, "hp")
    cfg = {"strategy": "history", "unique_key": "id", "updated_at": "u", "schema": schema,
           "file_format": "parquet"}
    root = make_project(tmp_path / "unfinished", "hist_unfinished",
                        {"hp": model_sql(cfg, f"select * from {schema}.src")})

    def leftovers():
        return sorted(t.name for t in spark.catalog.listTables(schema)
                      if t.name.startswith("hp__dbt_merge") and not t.isTemporary)

    def versions():
        spark.sql(f"refresh table {schema}.hp")
        table = spark.table(f"{schema}.hp").collect()
        return sorted((r.id, r.v, r.dbt_valid_to is None) for r in table)

    engine.create(schema, "src", SOURCE, [row(1, "a", 1, D[0]), row(2, "b", 1, D[0]),
                                          row(3, "c", 1, D[0])])
    assert run_dbt(["run"], root, "spark", PROFILES_DIR).success
    engine.create(schema, "src", SOURCE, [row(1, "a2", 1, D[1]), row(2, "b", 1, D[0]),
                                          row(3, "c", 1, D[0])])
    execute = dbt_spark_session.Cursor.execute

    def stopped(self, sql, *parameters):
        if f"insert overwrite table {schema}.hp " in sql.lower():  # after dbt's query comment
            spark.sql(f"truncate table {schema}.hp")  # what Spark had done when the kill came
            raise RuntimeError("stopped here by the test")
        return execute(self, sql, *parameters)

    monkeypatch.setattr(dbt_spark_session.Cursor, "execute", stopped)
    assert not run_dbt(["run"], root, "spark", PROFILES_DIR).success
    monkeypatch.setattr(dbt_spark_session.Cursor, "execute", execute)
    assert versions() == [] and len(leftovers()) == 1
    work = leftovers()

    run = run_dbt(["run", "--full-refresh"], root, "spark", PROFILES_DIR)
    message = run.error("hp")
    assert "--full-refresh would rebuild the history table" in message, message
    assert "The target was not changed." in message
    assert leftovers() == work and versions() == []
    twice = spark.createDataFrame([(1, "x", 1, D[3]), (1, "y", 1, D[4])], ["id", "v", "w", "u"])
    with pytest.raises(MergeError, match="occur more than once"):
        merge_dataframe(twice, f"{schema}.hp", "id", "history", updated_at="u", full_refresh=True)
    assert leftovers() == work and versions() == []

    run = run_dbt(["run"], root, "spark", PROFILES_DIR)
    assert run.success, run.error("hp")
    assert versions() == [(1, "a", False), (1, "a2", True), (2, "b", True), (3, "c", True)]
    assert leftovers() == []
