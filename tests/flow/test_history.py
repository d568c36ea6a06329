"""strategy='history' (SCD type 2) against the reference model, and against `dbt snapshot`.

- Sequences of source states (hypothesis draws them, derandomized: the same every run): keys that
  change, stay, leave and come back, rows older than their key's current version (late), times
  equal to the current version's, both validity sources (updated_at, the run's time), every
  hard_deletes mode, merge_check_columns, late_rows='fail', bad SELECTs (a NULL or repeated key,
  a NULL updated_at), max_delete_fraction. Each state is merged by a door, and after each run
  the table (every column, dbt_scd_id included) and the statistics must be the reference's; a
  refused run must leave the table as it was. DuckDB through merge_table (many sequences, no dbt
  start-up), Spark through merge_dataframe (a few: an Iceberg merge-on-read table of format 3, a
  partitioned parquet table).
- The run's time: a value the run holds that is no source time (those are in 2020-2024 and
  2100) is the run's; every such value a run writes must be one value (one time per run), and it
  stands for that run's RunTime in the reference.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from dataclasses import dataclass, field
from functools import cache

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support.reference import (
    HistoryOptions,
    MergeError,
    RunTime,
    ScdId,
    history_merge,
)

SEQUENCES = int(os.environ.get("DBT_MERGE_HISTORY_SEQUENCES", "48"))
DAYS = [dt.datetime(2024, 1, d) for d in range(1, 9)]
FUTURE = [dt.datetime(2100, 1, 1, h) for h in range(1, 4)]  # after any run's time
ERROR_EXCERPTS = {
    "null_key": "is NULL in",
    "duplicate_key": "occur more than once",
    "null_updated_at": "updated_at column 'u' is NULL",
    "late_row": "are late",
    "late_delete": "would close it before it starts",
    "mass_delete": "max_delete_fraction",
}


@dataclass
class Sequence:
    key: list[str]
    opts: HistoryOptions
    states: list[list[dict]] = field(default_factory=list)

    @property
    def columns(self) -> list[str]:
        return [*self.key, "v", "w", "u"]

    def describe(self) -> str:
        return f"key={self.key} {self.opts} states={self.states}"


@st.composite
def sequences(draw) -> Sequence:
    """Choices come from a hypothesis-seeded Random: hypothesis' own draws favour their first
    values (most states came out empty)."""
    rnd = draw(st.randoms(use_true_random=False))
    key = rnd.choice([["id"], ["id"], ["id", "g"]])
    opts = HistoryOptions(max_delete_fraction=rnd.choice([1.0, 1.0, 1.0, 0.5]))
    seq = Sequence(key, opts)
    for step in range(rnd.randint(3, 5)):
        rows = []
        for i in range(1, 6):
            if rnd.random() < 0.25:
                continue  # the key is not in this state (never was, left, or stays away)
            when = rnd.choice(["next", "next", "same", "same", "older", "future"])
            day = {
                "next": DAYS[min(step + 1, 7)],
                "same": DAYS[min(step, 7)],
                "older": DAYS[max(step - 1, 0)],
                "future": FUTURE[min(step, 2)],
            }[when]
            row = {"id": i, "v": rnd.choice(["a", "b", None]), "w": rnd.choice([1, 2]), "u": day}
            if len(key) > 1:
                row["g"] = "x" if i % 2 else "y"
            rows.append(row)
        bad = rnd.choice([None] * 14 + ["dup", "null_key", "null_u"])
        if bad and rows:
            if bad == "dup":
                rows.append(dict(rows[0], v="z"))
            elif bad == "null_key":
                rows[-1] = dict(rows[-1], id=None)
            elif bad == "null_u":
                rows[-1] = dict(rows[-1], u=None)
        seq.states.append(rows)
    return seq


@cache
def drawn(n: int) -> tuple[Sequence, ...]:
    found: list[Sequence] = []

    @settings(
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        max_examples=n,
        suppress_health_check=list(HealthCheck),
    )
    @given(sequences())
    def collect(seq: Sequence) -> None:
        found.append(seq)

    collect()
    # hypothesis' derandomized draws favour their first choices: the mode of each sequence is
    # set by its number, so that every hard_deletes mode meets both validity sources and each
    # kind of compared columns
    combos = [
        (mode, updated_at, check)
        for mode in ("ignore", "invalidate", "new_record")
        for updated_at in ("u", None)
        for check in (None, ["v"], ["all"])
    ]
    for i, seq in enumerate(found[:n]):
        mode, updated_at, check = combos[i % len(combos)]
        seq.opts.hard_deletes, seq.opts.updated_at, seq.opts.check_columns = mode, updated_at, check
        seq.opts.late_rows = "fail" if i % 7 == 3 else "hold"
    return tuple(found[:n])


# ------------------------------------------------------------------ comparing


def is_run_time(value) -> bool:
    return isinstance(value, dt.datetime) and 2025 <= value.year < 2090


def time_texts(value) -> set[str]:
    """How an engine casts a timestamp (or another value) to a string for dbt_scd_id."""
    if value is None:
        return {""}
    if isinstance(value, dt.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        fraction = f"{value.microsecond:06d}"
        return (
            {text + "." + fraction, text + "." + fraction.rstrip("0")}
            if value.microsecond
            else {text}
        )
    return {str(value)}


def resolve(value, times: dict[int, dt.datetime]):
    """A reference value as the table would hold it: a RunTime as its run's time."""
    return times.get(value.n, value) if isinstance(value, RunTime) else value


def _scd_text(parts: tuple, times) -> list[str]:
    options = [""]
    for i, part in enumerate(parts):
        part = resolve(part, times)
        texts = expected_ids(part, times) if isinstance(part, ScdId) else time_texts(part)
        options = [o + ("|" if i else "") + t for o in options for t in texts]
    return options


def expected_ids(scd: ScdId, times) -> set[str]:
    return {hashlib.md5(o.encode()).hexdigest() for o in _scd_text(scd.parts, times)}


def map_run_time(
    before: list[dict],
    after: list[dict],
    times: dict[int, dt.datetime],
    n: int,
) -> None:
    """The run's time (the one value of the table no source holds that is new after run `n`)."""
    old = {v for r in before for v in r.values() if is_run_time(v)}
    new = {v for r in after for v in r.values() if is_run_time(v)} - old - set(times.values())
    assert len(new) <= 1, f"run {n} wrote more than one time of its own: {sorted(new)}"
    if new:
        times[n] = new.pop()


def compare(got: list[dict], want: list[dict], times, columns: list[str]) -> None:
    """The table holds the reference's rows (a multiset), dbt_scd_id as its md5."""
    names = [*columns, "dbt_updated_at", "dbt_valid_from", "dbt_valid_to", "dbt_is_deleted"]

    def token(row: dict) -> tuple:
        return tuple(repr(resolve(row.get(c), times)) for c in names)

    left = sorted(map(token, got))
    right = sorted(map(token, want))
    assert left == right, f"rows differ:\n  table:     {left}\n  reference: {right}"
    by_token: dict[tuple, set] = {}
    for row in want:
        by_token.setdefault(token(row), set()).update(expected_ids(row["dbt_scd_id"], times))
    for row in got:
        assert row["dbt_scd_id"] in by_token[token(row)], (
            f"dbt_scd_id {row['dbt_scd_id']} of {token(row)} is not md5 of {by_token[token(row)]}"
        )


def sound(rows: list[dict], where: str) -> None:
    """What every table the package writes holds: dbt_scd_id unique, and no version valid for no
    time (every closed version ends after it starts)."""
    ids = [r["dbt_scd_id"] for r in rows]
    assert len(ids) == len(set(ids)), f"{where}: dbt_scd_id repeats: {sorted(ids)}"
    empty = [r for r in rows if r["dbt_valid_to"] is not None
             and not r["dbt_valid_to"] > r["dbt_valid_from"]]
    assert not empty, f"{where}: versions valid for no time: {empty}"


def run_sequence(seq: Sequence, merge, read) -> None:
    """Merge each state with `merge(rows, options)` (MergeResult, or MergeError raised) and check
    the table (`read()`: its rows, or None) against the reference after each."""
    table, times = None, {}
    options = {
        "updated_at": seq.opts.updated_at,
        "hard_deletes": seq.opts.hard_deletes,
        "late_rows": seq.opts.late_rows,
        "max_delete_fraction": seq.opts.max_delete_fraction,
    }
    if seq.opts.check_columns:
        options["merge_check_columns"] = (
            "all" if seq.opts.check_columns == ["all"] else seq.opts.check_columns
        )
    for n, rows in enumerate(seq.states):
        before = read() or []
        try:
            want, stats = history_merge(rows, table, seq.key, seq.columns, seq.opts, RunTime(n))
        except MergeError as error:
            with pytest.raises(Exception) as raised:
                merge(rows, options)
            assert any(ERROR_EXCERPTS[k] in str(raised.value) for k in error.kinds), (
                f"run {n}: expected {error.kinds}, got {raised.value}"
            )
            assert sorted(map(repr, read() or [])) == sorted(map(repr, before)), (
                f"run {n}: a refused run changed the table"
            )
            continue
        result = merge(rows, options)
        after = read()
        map_run_time(before, after, times, n)
        got = {k: getattr(result, k) for k in stats.as_dict()}
        assert got == stats.as_dict(), f"run {n}: stats {got} != reference {stats.as_dict()}"
        compare(after, want, times, seq.columns)
        sound(after, f"run {n}")
        table = want


# ------------------------------------------------------------------ DuckDB: merge_table


def duck_source(con, rows: list[dict], key: list[str]) -> str:
    columns = [
        ("id", "bigint"),
        *([("g", "varchar")] if len(key) > 1 else []),
        ("v", "varchar"),
        ("w", "integer"),
        ("u", "timestamp"),
    ]
    con.execute("create or replace table src (" + ", ".join(f"{c} {t}" for c, t in columns) + ")")
    if rows:
        con.executemany(
            f"insert into src values ({', '.join('?' for _ in columns)})",
            [[r[c] for c, _ in columns] for r in rows],
        )
    return "select * from src"


def duck_rows(con, name: str) -> list[dict] | None:
    if not con.execute(
        "select count(*) from information_schema.tables where table_name = ?", [name]
    ).fetchall()[0][0]:
        return None
    cur = con.execute(f"select * from {name}")
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def test_history_sequences_match_the_reference_on_duckdb():
    """Every drawn sequence, through merge_table, against the reference."""
    import duckdb
    from dbt_merge.duckdb.api import merge_table

    seqs = drawn(SEQUENCES)
    modes = {(s.opts.hard_deletes, s.opts.updated_at) for s in seqs}
    assert len(modes) == 6, modes  # every hard_deletes mode with both validity sources
    failures = []
    for i, seq in enumerate(seqs):
        con = duckdb.connect()
        try:
            run_sequence(
                seq,
                lambda rows, options, s=seq, c=con: merge_table(
                    c, duck_source(c, rows, s.key), "t", s.key, "history", **options
                ),
                lambda c=con: duck_rows(c, "t"),
            )
        except AssertionError as error:
            failures.append(f"sequence {i}: {error}\n  {seq.describe()}")
        finally:
            con.close()
    assert not failures, f"{len(failures)} of {len(seqs)} failed:\n" + "\n".join(failures[:5])


# ------------------------------------------------------------------ Parquet datasets


def arrow_source(rows: list[dict], key: list[str]):
    import pyarrow as pa

    fields = [
        ("id", pa.int64()),
        *([("g", pa.string())] if len(key) > 1 else []),
        ("v", pa.string()),
        ("w", pa.int32()),
        ("u", pa.timestamp("us")),
    ]
    schema = pa.schema(fields)
    return pa.table({n: [r[n] for r in rows] for n, _ in fields}, schema=schema)


def test_history_sequences_match_the_reference_on_parquet_datasets(tmp_path):
    """Drawn sequences through merge_parquet_dataset (the Parquet writer of the shared flow:
    the files holding a version that closes rewritten, new versions in new files), a third of
    them partitioned by `w` (a key's versions in several folders), against the reference."""
    from dbt_merge import merge_parquet_dataset
    from dbt_merge.parquet import read_dataset

    seqs = drawn(SEQUENCES)[: max(6, SEQUENCES // 2)]
    failures = []
    for i, seq in enumerate(seqs):
        root = tmp_path / f"ds{i}"
        extra = {"partition_by": "w"} if i % 3 == 1 else {}
        hive = {"w": "integer"} if extra else None

        def read(r=root, h=hive):
            if not r.exists():
                return None
            return read_dataset(r, hive_types=h).to_pylist()

        try:
            run_sequence(
                seq,
                lambda rows, options, s=seq, r=root, x=extra: merge_parquet_dataset(
                    arrow_source(rows, s.key), r, s.key, "history", **options, **x
                ),
                read,
            )
        except AssertionError as error:
            failures.append(f"sequence {i}{' (partitioned)' if extra else ''}: {error}\n"
                            f"  {seq.describe()}")
    assert not failures, f"{len(failures)} of {len(seqs)} failed:\n" + "\n".join(failures[:5])


# ------------------------------------------------------------------ Spark: merge_dataframe

#: (table kind, the sequence's hard_deletes and updated_at): Iceberg merge-on-read of format 3,
#: and a partitioned parquet table (the partition rewrite); copy-on-write Iceberg tables are
#: test_history_dbt.py's (every mode, both validity sources, against dbt snapshot)
SPARK_KINDS = [
    (
        {
            "file_format": "iceberg",
            "tblproperties": {
                "format-version": "3",
                "write.merge.mode": "merge-on-read",
                "write.update.mode": "merge-on-read",
            },
        },
        ("new_record", "u"),
    ),
    ({"file_format": "parquet", "partition_by": "w"}, ("ignore", "u")),
]


def spark_sequence(mode: str, updated_at: str | None) -> Sequence:
    """The first drawn sequence of that mode with at least three states of three rows or more."""
    for seq in drawn(SEQUENCES):
        if (seq.opts.hard_deletes, seq.opts.updated_at) == (mode, updated_at) and sum(
            len(state) >= 3 for state in seq.states
        ) >= 3:
            return seq
    raise AssertionError(f"no sequence for {mode}, {updated_at}")


@pytest.mark.spark
def test_history_sequences_match_the_reference_on_spark(spark):
    """A few drawn sequences, through merge_dataframe, into each kind of Spark table."""
    from dbt_merge.spark.api import merge_dataframe
    from pyspark.sql import types as T

    spark.sql("create database if not exists hist_seq")
    failures = []
    for number, (kind, wanted) in enumerate(SPARK_KINDS):
        seq = spark_sequence(*wanted)
        table = f"hist_seq.t{number}"
        spark.sql(f"drop table if exists {table}")
        fields = [
            T.StructField("id", T.LongType()),
            *([T.StructField("g", T.StringType())] if len(seq.key) > 1 else []),
            T.StructField("v", T.StringType()),
            T.StructField("w", T.IntegerType()),
            T.StructField("u", T.TimestampType()),
        ]
        schema = T.StructType(fields)

        def merge(rows, options, s=seq, t=table, k=kind, sc=schema):
            df = spark.createDataFrame([[r[f.name] for f in sc.fields] for r in rows], sc)
            return merge_dataframe(df, t, s.key, "history", **k, **options)

        def read(t=table):
            if not spark.catalog.tableExists(t):
                return None
            return [r.asDict() for r in spark.table(t).collect()]

        try:
            run_sequence(seq, merge, read)
        except AssertionError as error:
            failures.append(f"{kind}: {error}\n  {seq.describe()}")
    assert not failures, "\n".join(failures)


@pytest.mark.spark
def test_a_map_column_on_spark_is_merged_when_history_does_not_compare_it(spark):
    """Spark cannot compare MAP values: a history merge is refused only when it must compare the
    map (check_cols naming it, or the check strategy comparing every column), naming
    merge_check_columns; with updated_at alone or check_cols leaving it out, it merges run after
    run. merge_exclude_columns is not offered (history refuses it)."""
    from dbt_merge.errors import MergeError
    from dbt_merge.spark.api import merge_dataframe

    spark.sql("create database if not exists hist_seq")

    def frame(v, day):
        return spark.sql(f"select 1 as id, '{v}' as v, map('k', '{v}') as m, "
                         f"timestamp '2024-01-0{day}' as u")

    def versions():
        return sorted((r.v, r.dbt_valid_to is None) for r in spark.table(table).collect())

    for n, options in enumerate(({"updated_at": "u"}, {"check_cols": ["v"]})):
        table = f"hist_seq.with_map{n}"
        spark.sql(f"drop table if exists {table}")
        merge_dataframe(frame("a", 1), table, "id", "history", file_format="iceberg", **options)
        result = merge_dataframe(frame("b", 2), table, "id", "history", **options)
        assert (result.updated, result.total, result.versions) == (1, 1, 2), options
        result = merge_dataframe(frame("b", 2), table, "id", "history", **options)
        assert (result.unchanged, result.held_back, result.versions) == (1, 0, 2), options
        assert versions() == [("a", False), ("b", True)]
    before = versions()
    for options, match in [
        ({"check_cols": ["m"]}, "the columns it compares. Leave it out of merge_check_columns"),
        ({}, "the columns it compares. Leave it out of merge_check_columns"),
        ({"updated_at": "u", "merge_exclude_columns": ["m"]},
         "merge_exclude_columns does not apply to strategy 'history'"),
    ]:
        with pytest.raises(MergeError, match=match) as raised:
            merge_dataframe(frame("c", 3), table, "id", "history", **options)
        assert "merge_exclude_columns, or" not in str(raised.value)
        assert versions() == before


#: the instants of 01:30 in New York on 2026-11-01, before and after the clocks go back
REPEATED_HOUR = [1793511000000000, 1793514600000000]


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def test_the_run_time_is_one_instant_in_every_time_zone(engine, request):
    """The run's time is the clock read once as an instant, written as SQL that is that instant
    whatever the session's time zone: in the hour New York's clocks repeat, each 01:30 stays
    itself (as a timestamp with a zone), and a wall-clock timestamp or a date of it is what dbt's
    snapshot clock gives there (01:30, that day). A text of the clock cast back would make the
    two 01:30 one instant."""
    from dbt_merge.render import MacroContext

    if engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute("set TimeZone = 'America/New_York'")

        def query(sql):
            cursor = con.execute(sql)
            return [d[0] for d in cursor.description], cursor.fetchall()

        instant = "epoch_us(cast({} as timestamptz))"
        clock = "epoch_us(now())"
    else:
        spark = request.getfixturevalue("spark")
        zone = spark.conf.get("spark.sql.session.timeZone")
        spark.conf.set("spark.sql.session.timeZone", "America/New_York")
        request.addfinalizer(lambda: spark.conf.set("spark.sql.session.timeZone", zone))

        def query(sql):
            frame = spark.sql(sql)
            return frame.columns, [tuple(r) for r in frame.collect()]

        instant = "unix_micros(cast({} as timestamp))"
        clock = "unix_micros(current_timestamp())"

    def fail(message):
        raise AssertionError(message)

    macros = MacroContext({}, query, fail, engine=engine)
    for micros in REPEATED_HOUR:
        sql = macros.history_instant_sql(micros)
        wall = "timestamp" if engine == "duckdb" else "timestamp_ntz"
        got = query(f"select {instant.format(sql)}, cast(cast({sql} as {wall}) as string), "
                    f"cast(cast({sql} as date) as string)")[1][0]
        assert got == (micros, "2026-11-01 01:30:00", "2026-11-01"), (micros, got)
    before = query(f"select {clock}")[1][0][0]
    sql = macros.history_run_time()
    after = query(f"select {clock}")[1][0][0]
    assert before <= query(f"select {instant.format(sql)}")[1][0][0] <= after


@pytest.mark.spark
@pytest.mark.parametrize("kind", [{"file_format": "iceberg"}, {"file_format": "parquet"}],
                         ids=["iceberg", "parquet"])
def test_spark_checks_the_keys_a_run_writes(spark, kind):
    """Through merge_dataframe, on an Iceberg and a parquet table: a key with two current
    versions that the run leaves alone is left as it is and the run writes the others; the same
    key changed is refused naming it, the table unchanged; a table marking its current versions
    with 9999-12-31, merged without dbt_valid_to_current by new keys only, is refused naming
    the marker."""
    from dbt_merge.errors import MergeError
    from dbt_merge.spark.api import merge_dataframe

    day = dt.datetime(2024, 1, 1)
    table = f"hist_scope.t_{kind['file_format']}"
    spark.sql("create database if not exists hist_scope")
    spark.sql(f"drop table if exists {table}")

    def merge(rows, **options):
        df = spark.createDataFrame(rows, "id long, v string, u timestamp")
        return merge_dataframe(df, table, "id", "history", updated_at="u", **kind, **options)

    def state():
        return sorted(tuple(r) for r in spark.table(table).collect())

    merge([(1, "a", day), (2, "b", day), (3, "c", day)])
    spark.sql(f"insert into {table} select id, v, u, 'dup', dbt_updated_at, dbt_valid_from, "
              f"dbt_valid_to from {table} where id = 2")
    broken = [r for r in state() if r[0] == 2]
    result = merge([(1, "a2", day.replace(day=2)), (2, "b", day), (3, "c", day)])
    assert (result.updated, result.unchanged, result.total, result.versions) == (1, 2, 4, 5)
    assert [r for r in state() if r[0] == 2] == broken
    before = state()
    with pytest.raises(MergeError, match=r"more than one current version .* e\.g\. \(id\) = \(2\)"):
        merge([(2, "b2", day.replace(day=3))])
    assert state() == before

    marker = "cast('9999-12-31' as timestamp)"
    spark.sql(f"drop table if exists {table}")
    merge([(1, "a", day), (2, "b", day)], dbt_valid_to_current=marker)
    before = state()
    with pytest.raises(MergeError, match=r"has 2 key\(s\) whose last version ends at 9999-12-31"):
        merge([(5, "new", day.replace(day=2))])
    assert state() == before
