"""Spark: merges into Iceberg merge-on-read and format-v3 tables write once into a branch of the
run and are counted from that commit (macros/write/merge_on_branch.sql), where the session has
Iceberg's SQL extensions (the in-process session of the tests) or the door makes the branch
(merge_dataframe). Checked here, against the reference model:

- the statistics and rows of three merges in a row into each kind of table, every strategy that
  path takes, the tables accumulating position deletes or deletion vectors from one merge to the
  next, a wide table among them (the differential suite compares the same path with the
  reference on its generated cases);
- that the path was taken (the MERGE went into a branch, which is gone after the run), and that
  a table still at the snapshot this package published is not read for its keys again, while a
  table another writer committed to since is;
- a table holding a key twice, a v3 table whose column metrics are off: the passes instead, with
  today's refusal or counts, and no branch left;
- another writer committing between the branch's MERGE and its publication: the run is refused,
  main is the other writer's commit, the branch is gone (merge_dataframe, another thread);
- over thrift (a server without the extensions): the passes, and a v3 copy-on-write table refused
  with the fix (Spark cannot MERGE into it without them).
"""

from __future__ import annotations

import threading

import pytest
from dbt_helpers import run_dbt
from support.harness import PROFILES_DIR
from support.reference import Options
from support.reference import merge as reference_merge
from support.scenario import message, project

#: the write-once path, which a project asks for (dbt_merge_commit_counts: true)
pytestmark = pytest.mark.usefixtures("write_once")

MOR = {"write.merge.mode": "merge-on-read", "write.update.mode": "merge-on-read",
       "write.delete.mode": "merge-on-read"}
KINDS = {
    "mor": MOR,
    "v3": {"format-version": "3"},
    "v3_mor": {**MOR, "format-version": "3"},
}
STRATEGIES = {"mor": ["upsert", "insert"], "v3": ["upsert", "insert", "full_merge"],
              "v3_mor": ["upsert", "insert", "full_merge"]}
#: three increments: key -> name (the target starts with keys 0..9)
TARGET = {k: f"v{k}" for k in range(10)}
INCREMENTS = [
    {**{k: f"a{k}" for k in range(0, 4)}, **{k: f"v{k}" for k in range(4, 8)}, 20: "n20"},
    {**{k: f"b{k}" for k in range(2, 6)}, 21: "n21", 22: "n22"},
    {**{k: f"c{k}" for k in (1, 3, 5, 21)}, 23: "n23"},
]
WIDE = 60  # extra columns of the wide table


def _values(rows: dict[int, str], wide: int) -> str:
    return ", ".join(f"({k}, '{n}'" + "".join(f", '{n}{i}'" for i in range(wide)) + ")"
                     for k, n in sorted(rows.items()))


def _select(rows: dict[int, str], wide: int) -> str:
    extra = "".join(f", cast('{{n}}{i}' as string) as c{i}" for i in range(wide))
    first = True
    parts = []
    for k, n in sorted(rows.items()):
        if first:
            parts.append(f"select cast({k} as bigint) as id, cast('{n}' as string) as name"
                         + extra.format(n=n))
            first = False
        else:
            parts.append(f"select {k}, '{n}'" + "".join(f", '{n}{i}'" for i in range(wide)))
    return " union all ".join(parts)


def _create(db, s: str, table: str, kind: str, wide: int = 0) -> None:
    props = ", ".join(f"'{k}' = '{v}'" for k, v in KINDS[kind].items())
    columns = "id bigint, name string" + "".join(f", c{i} string" for i in range(wide))
    db.sql(f"drop table if exists {s}.{table}")
    db.sql(f"create table {s}.{table} ({columns}) using iceberg tblproperties ({props})")
    db.sql(f"insert into {s}.{table} values {_values(TARGET, wide)}")


def _branches(db, s: str, table: str) -> list[str]:
    return [r[0] for r in db.sql(f"select name from {s}.{table}.refs") if r[0] != "main"]


@pytest.mark.spark
@pytest.mark.parametrize("db", ["spark"], indirect=True)
def test_counts_from_the_commit_equal_the_reference(db, tmp_path):
    """Three merges in a row into each kind of table (the delete files and deletion vectors of
    one merge in the table of the next), every strategy the path takes, a 60-column table: the
    rows and the five statistics equal the reference's, each MERGE went into a branch, no branch
    is left, and from the second run on the tables' keys are not read again."""
    s = "commit_counts"
    db.engine.setup(s)
    models, expected = {}, {}
    for kind, strategies in STRATEGIES.items():
        for strategy in strategies:
            wide = WIDE if (kind, strategy) == ("v3_mor", "upsert") else 0
            model = f"cc_{kind}_{strategy}"
            _create(db, s, model, kind, wide)
            models[model] = ({"schema": s, "unique_key": "id", "strategy": strategy,
                              "max_delete_fraction": 1, "tblproperties": KINDS[kind]},
                             "{{ var('increment_" + str(wide) + "') }}")
            expected[model] = (strategy, dict(TARGET))
    root = project(db, tmp_path, "commit_counts", models)
    seen: list[str] = []

    def collect(event) -> None:
        if event.info.name == "SQLQuery":
            seen.append(event.data.sql)

    for step, increment in enumerate(INCREMENTS):
        seen.clear()
        run = run_dbt(["run"], root, "spark", PROFILES_DIR, callbacks=[collect],
                      vars={f"increment_{w}": _select(increment, w) for w in (0, WIDE)})
        for model, (strategy, before) in expected.items():
            rows, stats = reference_merge(
                strategy, [{"id": k, "name": n} for k, n in increment.items()],
                [{"id": k, "name": n} for k, n in before.items()], ["id"],
                Options(max_delete_fraction=1), engine="spark")
            expected[model] = (strategy, {r["id"]: r["name"] for r in rows})
            said, counts = message(run, model), stats.as_dict()
            assert (f"{counts['inserted']} inserted, {counts['updated']} updated, "
                    f"{counts['deleted']} deleted, {counts['unchanged']} unchanged, "
                    f"{counts['total']} total") in said, (step, model, said, counts)
            got = {r[0]: r[1] for r in db.sql(f"select id, name from {s}.{model}")}
            assert got == expected[model][1], (step, model)
            assert _branches(db, s, model) == [], model
        into_branch = [q for q in seen if "merge into" in q and ".branch_dbt_merge_" in q]
        assert len(into_branch) == len(models), (step, len(into_branch))
        # from the second run on each table is at the snapshot the package published: its keys
        # are not read again (the source check's own distinct reads the staged SELECT)
        key_reads = [q for q in seen if "count(distinct" in q and f"from {s}.cc_" in q]
        assert len(key_reads) == (0 if step else len(models)), (step, len(key_reads))


@pytest.mark.spark
@pytest.mark.parametrize("db", ["spark"], indirect=True)
def test_what_the_commit_cannot_say_takes_the_passes(db, tmp_path):
    """A key the table holds twice (today's refusal), a v3 table with column metrics off (the
    passes' counts), another writer's commit since the package's (the keys read again), a v3
    full_merge deleting most of the table (the passes' INSERT OVERWRITE)."""
    s = "commit_counts_passes"
    db.engine.setup(s)
    _create(db, s, "twice", "v3_mor")
    db.sql(f"insert into {s}.twice values (3, 'again')")
    _create(db, s, "no_metrics", "v3")
    db.sql(f"alter table {s}.no_metrics set tblproperties "
           "('write.metadata.metrics.default' = 'none')")
    _create(db, s, "other_writer", "mor")
    _create(db, s, "half_gone", "v3")
    increment = {3: "x3", 11: "n11"}
    cfg = {"schema": s, "unique_key": "id"}
    models = {m: ({**cfg, "tblproperties": KINDS[k]}, _select(increment, 0))
              for m, k in (("twice", "v3_mor"), ("no_metrics", "v3"), ("other_writer", "mor"))}
    # a full_merge of 2 rows into 10 deletes most of the table: one INSERT OVERWRITE (into the
    # run's branch, published by a fast-forward), no MERGE
    models["half_gone"] = ({**cfg, "tblproperties": KINDS["v3"], "strategy": "full_merge",
                            "max_delete_fraction": 1}, _select(increment, 0))
    root = project(db, tmp_path, "passes", models)
    first: list[str] = []
    run = run_dbt(["run"], root, "spark", PROFILES_DIR,
                  callbacks=[lambda e: first.append(" ".join(e.data.sql.lower().split()))
                             if e.info.name == "SQLQuery" else None])
    assert "1 inserted, 1 updated, 9 deleted, 0 unchanged, 2 total" in message(run, "half_gone")
    assert dict(db.sql(f"select id, name from {s}.half_gone")) == {3: "x3", 11: "n11"}
    assert not [q for q in first if "half_gone" in q and "merge into" in q]
    assert [q for q in first if "half_gone" in q and "insert overwrite" in q
            and ".branch_dbt_merge_" in q]
    said = message(run, "twice")
    assert "already holds 1 extra row(s) for keys of the SELECT, e.g. (id) = (3)" in said, said
    assert sorted(db.sql(f"select id, name from {s}.twice"))[3:5] == [(3, "again"), (3, "v3")]
    assert "1 inserted, 1 updated, 0 deleted, 0 unchanged, 11 total" in message(run, "no_metrics")
    assert "1 inserted, 1 updated, 0 deleted, 0 unchanged, 11 total" in message(
        run, "other_writer")
    for table in ("twice", "no_metrics", "other_writer", "half_gone"):
        assert _branches(db, s, table) == [], table
    # another writer commits; the next run reads the table's keys again, and still counts right
    db.sql(f"insert into {s}.other_writer values (12, 'w')")
    seen: list[str] = []
    run = run_dbt(["run", "--select", "other_writer"], root, "spark", PROFILES_DIR,
                  callbacks=[lambda e: seen.append(e.data.sql)
                             if e.info.name == "SQLQuery" else None])
    assert "0 inserted, 0 updated, 0 deleted, 2 unchanged, 12 total" in message(
        run, "other_writer")
    assert [q for q in seen if "count(distinct" in q and "other_writer" in q]


@pytest.mark.spark
def test_another_writer_before_the_publication_refuses_the_run(spark, monkeypatch):
    """merge_dataframe into a merge-on-read table: another thread commits to main after the
    MERGE went into the branch: refused with the concurrent-writer message, main is the other
    writer's commit (no row of the merge), the branch is gone, snapshot marks untouched."""
    from dbt_merge.spark import MergeError, merge_dataframe
    from dbt_merge.spark import session as spark_session

    table = "commit_counts_df.race"
    spark.sql("create database if not exists commit_counts_df")
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} (id bigint, name string) using iceberg tblproperties ("
              + ", ".join(f"'{k}' = '{v}'" for k, v in MOR.items()) + ")")
    spark.sql(f"insert into {table} values (1, 'a'), (2, 'b')")
    original = spark_session.SparkRunner.statement

    def statement(self, sql: str) -> None:
        original(self, sql)
        if "merge into" in sql and ".branch_dbt_merge_" in sql:
            other = threading.Thread(target=lambda: spark.sql(
                f"insert into {table} values (9, 'other')"))
            other.start()
            other.join()

    monkeypatch.setattr(spark_session.SparkRunner, "statement", statement)
    source = spark.createDataFrame([(1, "A"), (3, "c")], "id bigint, name string")
    with pytest.raises(MergeError, match="another writer committed to"):
        merge_dataframe(source, table, key_columns="id")
    assert sorted(tuple(r) for r in spark.table(table).collect()) == [
        (1, "a"), (2, "b"), (9, "other")]
    assert [r[0] for r in spark.sql(f"select name from {table}.refs").collect()] == ["main"]
    monkeypatch.setattr(spark_session.SparkRunner, "statement", original)
    result = merge_dataframe(source, table, key_columns="id")
    assert (result.inserted, result.updated, result.unchanged, result.total) == (1, 1, 0, 4)
    main = spark.sql(f"select snapshot_id from {table}.refs where name = 'main'").collect()[0][0]
    assert result.snapshot_id == main


@pytest.mark.spark
@pytest.mark.thrift
@pytest.mark.parametrize("db", ["spark_thrift"], indirect=True)
def test_without_the_extensions(db, tmp_path):
    """Over a Thrift server without Iceberg's SQL extensions: a merge-on-read table is merged by
    the passes (no branch), and a v3 copy-on-write table, which Spark cannot MERGE into without
    them, is refused with the fix, the table unchanged."""
    s = "commit_counts_thrift"
    db.engine.setup(s)
    _create(db, s, "mor_t", "mor")
    _create(db, s, "v3_t", "v3")
    increment = {3: "x3", 11: "n11"}
    cfg = {"schema": s, "unique_key": "id"}
    root = project(db, tmp_path, "thrift", {
        "mor_t": ({**cfg, "tblproperties": KINDS["mor"]}, _select(increment, 0)),
        "v3_t": ({**cfg, "tblproperties": KINDS["v3"]}, _select(increment, 0))})
    run = run_dbt(["run"], root, "spark_thrift", PROFILES_DIR)
    assert "1 inserted, 1 updated, 0 deleted, 0 unchanged, 11 total" in message(run, "mor_t")
    said = message(run, "v3_t")
    assert "format version 3 written copy-on-write" in said and "spark.sql.extensions" in said
    assert sorted(db.rows(s, "v3_t")) == sorted((k, n) for k, n in TARGET.items())
    for table in ("mor_t", "v3_t"):
        assert _branches(db, s, table) == [], table


@pytest.mark.spark
@pytest.mark.parametrize("db", ["spark"], indirect=True)
def test_a_repeated_key_fails_the_merge_and_the_next_run_merges(db, tmp_path):
    """The write-once MERGE of a SELECT too large to broadcast tests its keys itself: a key
    repeated among rows that match (3) or among new ones (12) fails it with the package's
    message before anything is committed, the table as it was, no table property set; the
    run's branch stays, at the table's snapshot (a later run drops a branch of the package only
    when its name says it is a day old: it could be a live run's); the next run merges, leaving
    it. A full_merge deleting more
    than max_delete_fraction, which only the branch's commit shows, is refused, its branch
    dropped, main untouched."""
    s = "commit_counts_keys"
    db.engine.setup(s)
    kinds = {"rk_mor": "mor", "rk_v3": "v3", "rk_guard": "v3"}
    for table, kind in kinds.items():
        _create(db, s, table, kind)
    bad = {"rk_mor": "select cast(3 as bigint) as id, 'x' as name union all select 3, 'y'",
           "rk_v3": "select cast(12 as bigint) as id, 'x' as name union all select 12, 'y'",
           # full_merge deleting 3 of 10 rows, more than 20%: only the branch's commit shows it
           "rk_guard": _select({k: TARGET[k] for k in range(7)}, 0)}
    good = {"rk_mor": _select({3: "x3", 12: "n12"}, 0), "rk_v3": _select({3: "x3", 12: "n12"}, 0),
            "rk_guard": _select({**TARGET, 3: "x3", 12: "n12"}, 0)}
    models = {t: ({"schema": s, "unique_key": "id", "tblproperties": KINDS[k],
                   **({"strategy": "full_merge", "max_delete_fraction": 0.2}
                      if t == "rk_guard" else {})},
                  "{{ var('" + t + "') }}") for t, k in kinds.items()}
    root = project(db, tmp_path, "repeated", models)
    seen: list[str] = []
    # the keys tested inside the MERGE, as for a SELECT too large to broadcast (a small one's
    # keys are the check's, as in the passes)
    run = run_dbt(["run"], root, "spark", PROFILES_DIR,
                  vars={**bad, "dbt_merge_spark_full_join_bytes": 0},
                  callbacks=[lambda e: seen.append(" ".join(e.data.sql.lower().split()))
                             if e.info.name == "SQLQuery" else None])
    assert [q for q in seen if "rk_guard" in q and "create branch" in q], "no branch made"
    for table, key in (("rk_mor", 3), ("rk_v3", 12)):
        said = message(run, table)
        assert ("unique_key value(s) occur more than once in the model's SELECT, e.g. (id) = "
                f"({key})") in said and "The target was not changed." in said, said
        assert f"'{table}': dbt_merge: model" not in said, said
        assert [q for q in seen if f"merge into {s}.{table}.branch_" in q], table  # the MERGE's
    said = message(run, "rk_guard")
    assert "full_merge would delete 3 of the 10 target rows it considers (30.0%)" in said, said
    assert _branches(db, s, "rk_guard") == []
    # the failed MERGE's branch stays: it holds no commit of its own (it is at the table's
    # snapshot), and no later run can tell it from a live run's until its name is a day old
    left = {}
    for table in models:
        assert dict(db.sql(f"select id, name from {s}.{table}")) == TARGET, table
        main = db.sql(f"select snapshot_id from {s}.{table}.refs where name = 'main'")[0][0]
        left[table] = [r for r in db.sql(f"select name, snapshot_id from {s}.{table}.refs")
                       if r[0] != "main"]
        assert [r[1] for r in left[table]] == ([] if table == "rk_guard" else [main]), table
    assert [q for q in seen if "set tblproperties" in q and "dbt_merge.branch" in q] == []
    run = run_dbt(["run"], root, "spark", PROFILES_DIR, vars=good)
    for table in models:
        unchanged = 9 if table == "rk_guard" else 0
        assert (f"1 inserted, 1 updated, 0 deleted, {unchanged} unchanged, 11 total"
                in message(run, table)), message(run, table)
        assert _branches(db, s, table) == [r[0] for r in left[table]], table
