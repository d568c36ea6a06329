"""strategy='history': every refusal (docs/errors.md, "History tables"), on DuckDB through
merge_table (the config and the checks are the shared macros', the same on every door): the
message names the option or the key, and the table is left exactly as it was. Then what a run
reports and leaves: dry_run, merge_history_table's row, incremental_predicates,
on_schema_change='append_new_columns', dbt_valid_to_current, snapshot_meta_column_names, check
columns with updated_at, and the current_unique test's query on a broken table."""

from __future__ import annotations

import duckdb
import pytest
from dbt_merge.duckdb.api import merge_table
from dbt_merge.errors import MergeError

FIRST = (
    "select * from (values (1, 'a', 1, timestamp '2024-01-01'), (2, 'b', 1, timestamp "
    "'2024-01-01'), (3, 'c', 1, timestamp '2024-01-01'), (4, 'd', 1, timestamp '2024-01-01'))"
    " as s(id, v, w, u)"
)


def rows(con, table="t"):
    return sorted(con.execute(f"select * from {table}").fetchall(), key=repr)


@pytest.fixture
def con():
    c = duckdb.connect()
    merge_table(c, FIRST, "t", "id", "history", updated_at="u")
    yield c
    c.close()


def refused(con, source, match, strategy="history", **options):
    before = rows(con)
    with pytest.raises(MergeError, match=match) as raised:
        merge_table(con, source, "t", "id", strategy, **options)
    assert rows(con) == before, "a refused run changed the table"
    assert "dbt_merge: table 't': " in str(raised.value)
    return str(raised.value)


def values(*tuples) -> str:
    body = ", ".join("(" + ", ".join(map(str, t)) + ")" for t in tuples)
    return f"select * from (values {body}) as s(id, v, w, u)"


TS = "timestamp '2024-01-0{}'"


@pytest.mark.parametrize(
    "option, value, match",
    [
        (
            "merge_update_columns",
            ["v"],
            "merge_update_columns does not apply to strategy 'history'",
        ),
        ("merge_exclude_columns", ["v"], "merge_exclude_columns does not apply"),
        ("merge_update_condition", "true", "merge_update_condition does not apply"),
        ("delete_condition", "false", "delete_condition does not apply"),
        ("soft_delete_column", "gone", "soft_delete_column does not apply"),
        ("detect_unchanged", False, "detect_unchanged=false does not apply"),
        ("on_key_outside_predicates", "insert", "would get a second current version"),
        ("on_schema_change", "sync_all_columns", "would drop or retype columns that past versions"),
        (
            "hard_deletes",
            "soft",
            "hard_deletes 'soft' is not one of: ignore, invalidate, new_record",
        ),
        ("late_rows", "skip", "late_rows 'skip' is not one of: hold"),
        (
            "snapshot_meta_column_names",
            {"dbt_valid_from": "dbt_valid_to"},
            "gives two of the columns one name",
        ),
        (
            "snapshot_meta_column_names",
            {"valid_from": "x"},
            "names 'valid_from', which is not one of",
        ),
        ("dbt_valid_to_current", " ", "dbt_valid_to_current must be SQL"),
        ("check_cols", [], "check_cols is empty"),
    ],
)
def test_options_refused_for_history(con, option, value, match):
    refused(con, FIRST, match, updated_at="u", **{option: value})


def test_check_cols_and_merge_check_columns_are_one_option(con):
    refused(
        con,
        FIRST,
        "check_cols and merge_check_columns are both set",
        check_cols=["v"],
        merge_check_columns=["v"],
    )


@pytest.mark.parametrize(
    "option, value",
    [
        ("updated_at", "u"),
        ("hard_deletes", "invalidate"),
        ("late_rows", "fail"),
        ("check_cols", ["v"]),
        ("dbt_valid_to_current", "null"),
    ],
)
def test_history_options_refused_with_another_strategy(option, value):
    c = duckdb.connect()
    with pytest.raises(
        MergeError,
        match=f"{option} is set but strategy is 'upsert'; it is only used by strategy 'history'",
    ):
        merge_table(c, FIRST, "t", "id", "upsert", **{option: value})
    assert not c.execute("select * from information_schema.tables").fetchall()


def test_updated_at_must_be_a_date_or_timestamp_of_the_select(con):
    refused(con, FIRST, "updated_at column 'changed' is not in the source", updated_at="changed")
    refused(
        con,
        FIRST,
        "updated_at column 'v' has type VARCHAR, but a version is valid from its value",
        updated_at="v",
    )


def test_a_null_updated_at_is_refused_naming_the_key(con):
    refused(
        con,
        values((3, "'c'", 1, "cast(null as timestamp)")),
        r"updated_at column 'u' is NULL in 1 row\(s\) of the source, e.g. \(id\) = \(3\)",
        updated_at="u",
    )


def test_repeated_and_null_keys_are_refused_unless_dedup_order_by(con):
    twice = values((1, "'x'", 1, TS.format(2)), (1, "'y'", 2, TS.format(3)))
    # the fix named is dedup_order_by on the history merge itself, not another strategy
    message = refused(con, twice, "occur more than once", updated_at="u")
    assert ("or set dedup_order_by on this model (e.g. dedup_order_by='u desc'): strategy "
            "'history' then keeps one row per key, the first in that order." in message)
    assert "strategy='deduplicate'" not in message
    refused(
        con, values(("cast(null as int)", "'x'", 1, TS.format(2))), "is NULL in", updated_at="u"
    )
    result = merge_table(con, twice, "t", "id", "history", updated_at="u", dedup_order_by="u desc")
    assert (result.inserted, result.updated, result.unchanged) == (0, 1, 0)
    assert con.execute("select v from t where id = 1 and dbt_valid_to is null").fetchall() == [
        ("y",)
    ]


def test_a_column_named_like_a_history_column_is_refused(con):
    refused(
        con,
        "select id, v, w, u, u as dbt_valid_to from t where dbt_valid_to is null",
        "the source has a column 'dbt_valid_to', which strategy 'history' writes itself",
        updated_at="u",
    )


def test_a_table_that_is_no_history_table_is_refused():
    c = duckdb.connect()
    c.execute("create table t as select 1 as id, 'a' as v")
    with pytest.raises(
        MergeError, match="has no column 'dbt_scd_id' .*so it is not a history table"
    ):
        merge_table(c, "select 1 as id, 'b' as v", "t", "id", "history")
    assert c.execute("select * from t").fetchall() == [(1, "a")]


def test_new_record_on_a_table_without_dbt_is_deleted(con):
    refused(
        con,
        values((1, "'a'", 1, TS.format(1))),
        "which hard_deletes='new_record' writes. Add it with",
        updated_at="u",
        hard_deletes="new_record",
    )
    result = merge_table(
        con,
        values((1, "'a'", 1, TS.format(1))),
        "t",
        "id",
        "history",
        updated_at="u",
        hard_deletes="new_record",
        on_schema_change="append_new_columns",
        max_delete_fraction=1,
    )
    assert (result.deleted, result.unchanged, result.total, result.versions) == (3, 1, 4, 7)
    assert con.execute(
        "select count(*) from t where dbt_is_deleted = 'True' and dbt_valid_to is null"
    ).fetchall() == [(3,)]


def test_two_current_versions_of_a_key_are_refused_naming_it(con):
    con.execute(
        "insert into t select id, 'z', w, u, 'x', dbt_updated_at, dbt_valid_from, null from t "
        "where id = 2"
    )
    message = refused(
        con,
        FIRST,
        r"holds more than one current version \(dbt_valid_to NULL\) of some keys "
        r"\(2 rows\), e.g. \(id\) = \(2\)",
        updated_at="u",
    )
    assert "dbt_merge.current_unique" in message


def test_overlapping_versions_are_refused_naming_the_key(con):
    # a closed version of key 3 that ends after its current version starts
    con.execute(
        "insert into t values (3, 'old', 1, timestamp '2023-06-01', 'x', timestamp '2023-06-01', "
        "timestamp '2023-06-01', timestamp '2024-02-01')"
    )
    changed = values((1, "'a'", 1, TS.format(1)), (3, "'c2'", 1, TS.format(2)))
    refused(
        con,
        changed,
        r"1 version\(s\) whose validity .* overlaps the next version of the key, ends before "
        r"it starts, or has no start, e.g. \(id\) = \(3\)",
        updated_at="u",
    )
    con.execute("update t set dbt_valid_to = timestamp '2023-01-01' where v = 'old'")
    refused(con, changed, r"e.g. \(id\) = \(3\)", updated_at="u")  # ends before it starts
    # closed by hard_deletes: written, so read too
    refused(
        con,
        values((1, "'a'", 1, TS.format(1))),
        r"e.g. \(id\) = \(3\)",
        updated_at="u",
        hard_deletes="invalidate",
        max_delete_fraction=1,
    )


def test_a_broken_key_the_run_leaves_alone_is_not_read(con):
    """Only the keys the run writes are checked: a daily snapshot of a dimension reads the
    versions of its changed keys, not the whole table. A key with two current versions, or
    overlapping ones, that the SELECT repeats as it is (or lacks, without hard_deletes) is left
    exactly as it was; the run writes the other keys."""
    con.execute(
        "insert into t select id, v, w, u, 'x', dbt_updated_at, dbt_valid_from, null from t "
        "where id = 2"
    )
    con.execute(
        "insert into t values (3, 'old', 1, timestamp '2023-06-01', 'x', timestamp '2023-06-01', "
        "timestamp '2023-06-01', timestamp '2024-02-01')"
    )
    broken = [r for r in rows(con) if r[0] in (2, 3)]
    result = merge_table(
        con,
        values(
            (1, "'a2'", 1, TS.format(2)), (2, "'b'", 1, TS.format(1)), (3, "'c'", 1, TS.format(1))
        ),
        "t",
        "id",
        "history",
        updated_at="u",
    )
    assert (result.updated, result.unchanged, result.total, result.versions) == (1, 2, 5, 7)
    assert [r for r in rows(con) if r[0] in (2, 3)] == broken
    # the same keys changed: refused, naming them
    refused(
        con,
        values((2, "'b2'", 1, TS.format(3))),
        r"holds more than one current version .* e.g. \(id\) = \(2\)",
        updated_at="u",
    )
    changed = values((3, "'c2'", 1, TS.format(3)))
    refused(con, changed, r"overlaps .* e.g. \(id\) = \(3\)", updated_at="u")


@pytest.mark.parametrize(
    "setting",
    [{}, {"dbt_valid_to_current": "cast('2999-12-31' as timestamp)"}],
    ids=["unset", "other"],
)
def test_a_run_of_new_keys_without_the_tables_marker_is_refused(setting):
    """A table marking its current versions with dbt_valid_to 9999-12-31, merged without
    dbt_valid_to_current (or with another value) by a SELECT of new keys only: refused naming the
    marker, though the run writes none of the marked keys (red team helper-89: written, the new key
    got a NULL or 2999-12-31 end, and the next run, with the right marker, was refused naming the
    wrong one)."""
    c = duckdb.connect()
    marker = "cast('9999-12-31' as timestamp)"
    merge_table(c, FIRST, "t", "id", "history", updated_at="u", dbt_valid_to_current=marker)
    before = rows(c)
    with pytest.raises(MergeError, match=r"has 4 key\(s\) whose last version ends at 9999-12-31 "
                       r"00:00:00, .* marks its current versions with dbt_valid_to = 9999-12-31"):
        merge_table(c, values((5, "'new'", 1, TS.format(2))), "t", "id", "history", updated_at="u",
                    **setting)
    assert rows(c) == before
    result = merge_table(c, values((5, "'new'", 1, TS.format(2))), "t", "id", "history",
                         updated_at="u", dbt_valid_to_current=marker)
    assert (result.inserted, result.total, result.versions) == (1, 5, 5)


def test_max_delete_fraction_counts_keys_not_the_current_versions_of_a_broken_key(con):
    """hard_deletes would close 3 of the 4 keys (75%, more than the default 0.5) while key 4, which
    the SELECT repeats as it is, holds four current versions: refused, counted in keys (red team
    helper-89: 3 of 7 current versions, 43%, let the deletions through)."""
    for j in range(3):
        con.execute(
            f"insert into t select * replace ('dup{j}' as dbt_scd_id) from t "
            "where id = 4 and dbt_scd_id not like 'dup%'"
        )
    message = refused(
        con,
        values((4, "'d'", 1, TS.format(1))),
        r"hard_deletes='invalidate' would close 3 of the 4 keys with a current version it "
        r"considers \(75.0%\), more than max_delete_fraction=0.5 allows \(the table holds 3 more "
        r"current version\(s\) of keys this run leaves alone",
        updated_at="u",
        hard_deletes="invalidate",
    )
    assert "dbt_merge.current_unique" in message


def test_a_key_whose_current_version_is_outside_the_predicates_is_refused_not_held_back():
    """A key whose only current version lies outside incremental_predicates, with a closed
    version starting after the SELECT's row: refused as outside the predicates (red team
    helper-89: classified late, it was held back)."""
    c = duckdb.connect()
    t = "timestamp '2099-01-01'"
    c.execute(
        "create table t (id integer, v varchar, u timestamp, dbt_scd_id varchar, "
        "dbt_updated_at timestamp, dbt_valid_from timestamp, dbt_valid_to timestamp)"
    )
    c.execute(
        f"insert into t values (1, 'a', {TS.format(1)}, 's1', {TS.format(1)}, {TS.format(1)}, "
        f"null), (9, 'old', {t}, 's9a', {t}, {t}, {t}), (9, 'new', {t}, 's9b', {t}, {t}, null)"
    )
    before = rows(c)
    with pytest.raises(MergeError, match=r"outside incremental_predicates, e.g. \(id\) = \(9\)"):
        merge_table(
            c,
            "select * from (values (1, 'a', timestamp '2024-01-01'), "
            "(9, 'z', timestamp '2024-01-05')) as s(id, v, u)",
            "t",
            "id",
            "history",
            updated_at="u",
            incremental_predicates=["DBT_INTERNAL_DEST.id < 5"],
        )
    assert rows(c) == before


def test_late_rows_are_held_back_and_counted_or_refused(con):
    late = values((1, "'older'", 1, "timestamp '2023-12-31'"), (2, "'b'", 1, TS.format(1)))
    refused(
        con,
        late,
        r"1 row\(s\) of the source are late: not newer than their key's current version .* "
        r"e.g. \(id\) = \(1\), and late_rows='fail'",
        updated_at="u",
        late_rows="fail",
    )
    before = rows(con)
    result = merge_table(con, late, "t", "id", "history", updated_at="u")
    assert (result.held_back, result.unchanged, result.updated, result.versions) == (1, 1, 0, 4)
    assert rows(con) == before


def test_max_delete_fraction_guards_invalidations(con):
    refused(
        con,
        values((1, "'a'", 1, TS.format(1))),
        r"hard_deletes='invalidate' would close 3 of the 4 current versions it considers "
        r"\(75.0%\), more "
        "than max_delete_fraction=0.5",
        updated_at="u",
        hard_deletes="invalidate",
    )
    result = merge_table(
        con,
        values((1, "'a'", 1, TS.format(1))),
        "t",
        "id",
        "history",
        updated_at="u",
        hard_deletes="invalidate",
        max_delete_fraction=0.75,
    )
    assert (result.deleted, result.total, result.versions) == (3, 1, 4)


def test_a_key_whose_current_version_is_outside_the_predicates(con):
    source = values((1, "'a2'", 1, TS.format(2)), (3, "'c2'", 1, TS.format(2)))
    refused(
        con,
        source,
        r"have a key whose current version in .* is outside incremental_predicates, e.g. "
        r"\(id\) = \(3\)",
        updated_at="u",
        incremental_predicates=["DBT_INTERNAL_DEST.id < 3"],
    )
    result = merge_table(
        con,
        values((1, "'a2'", 1, TS.format(2))),
        "t",
        "id",
        "history",
        updated_at="u",
        hard_deletes="invalidate",
        max_delete_fraction=1,
        incremental_predicates=["DBT_INTERNAL_DEST.id < 3"],
    )
    # only key 2 is considered for deletion: 3 and 4 are outside the predicates
    assert (result.updated, result.deleted, result.total) == (1, 1, 3)


def test_dry_run_counts_and_writes_nothing(con):
    before = rows(con)
    result = merge_table(
        con,
        values((1, "'a2'", 1, TS.format(2)), (5, "'e'", 1, TS.format(2))),
        "t",
        "id",
        "history",
        updated_at="u",
        hard_deletes="invalidate",
        max_delete_fraction=1,
        dry_run=True,
    )
    assert result.dry_run and (
        result.inserted,
        result.updated,
        result.deleted,
        result.total,
        result.versions,
    ) == (1, 1, 3, 2, 6)
    assert rows(con) == before


def test_merge_history_table_gets_the_versions(con):
    con.execute(
        "create table h (model_unique_id varchar, strategy varchar, invocation_id varchar, "
        "started_at timestamp, finished_at timestamp, inserted bigint, updated bigint, "
        "deleted bigint, unchanged bigint, held_back bigint, total bigint)"
    )  # an older table
    merge_table(
        con,
        values((1, "'a2'", 1, TS.format(2))),
        "t",
        "id",
        "history",
        updated_at="u",
        merge_history_table="h",
    )
    merge_table(
        con,
        values((1, "'a3'", 1, TS.format(3))),
        "t",
        "id",
        "history",
        updated_at="u",
        merge_history_table="h",
    )
    assert con.execute(
        "select strategy, inserted, updated, unchanged, held_back, total, versions from h "
        "order by started_at"
    ).fetchall() == [("history", 0, 1, 0, 0, 4, 5), ("history", 0, 1, 0, 0, 4, 6)]


def test_new_columns_are_appended_null_in_past_versions(con):
    source = "select id, v, w, u, 'n' as extra from t where dbt_valid_to is null"
    result = merge_table(
        con,
        source,
        "t",
        "id",
        "history",
        updated_at="u",
        check_cols=["v", "extra"],
        on_schema_change="append_new_columns",
    )
    # extra differs (NULL in the current versions, 'n') at the same updated_at: a version valid for
    # no time, so held back (late); the column is added all the same
    assert (result.updated, result.unchanged, result.held_back) == (0, 0, 4)
    newer = (
        "select id, v, w, u + interval 1 day as u, 'n' as extra from t where dbt_valid_to is null"
    )
    result = merge_table(
        con,
        newer,
        "t",
        "id",
        "history",
        updated_at="u",
        check_cols=["v", "extra"],
        on_schema_change="append_new_columns",
    )
    assert (result.updated, result.total, result.versions) == (4, 4, 8)
    assert con.execute(
        "select count(*) filter (where extra is null), count(*) filter (where extra = 'n') from t"
    ).fetchall() == [(4, 4)]


def test_check_columns_with_updated_at(con):
    # a newer updated_at with the same compared column is no new version; a changed one is
    source = values((1, "'a'", 2, TS.format(3)), (2, "'b2'", 1, TS.format(3)))
    result = merge_table(con, source, "t", "id", "history", updated_at="u", check_cols=["v"])
    assert (result.updated, result.unchanged) == (1, 1)
    assert (
        con.execute("select dbt_valid_to from t where id = 2 and v = 'b'").fetchall()[0][0].day == 3
    )


def test_other_column_names_and_valid_to_current():
    c = duckdb.connect()
    names = {
        "dbt_valid_from": "valid_from",
        "dbt_valid_to": "valid_to",
        "dbt_scd_id": "version_id",
        "dbt_updated_at": "changed_at",
    }
    options = dict(
        updated_at="u",
        snapshot_meta_column_names=names,
        hard_deletes="invalidate",
        dbt_valid_to_current="timestamp '9999-12-31'",
        max_delete_fraction=1,
    )
    merge_table(c, FIRST, "t", "id", "history", **options)
    assert [
        r[0]
        for r in c.execute(
            "select column_name from information_schema.columns where "
            "table_name = 't' order by ordinal_position"
        ).fetchall()
    ] == ["id", "v", "w", "u", "version_id", "changed_at", "valid_from", "valid_to"]
    result = merge_table(c, values((1, "'a2'", 1, TS.format(2))), "t", "id", "history", **options)
    assert (result.updated, result.deleted, result.total, result.versions) == (1, 3, 1, 5)
    assert c.execute(
        "select count(*) from t where valid_to = timestamp '9999-12-31'"
    ).fetchall() == [(1,)]


def test_full_refresh_true_rebuilds_from_the_select(con):
    result = merge_table(
        con,
        values((9, "'z'", 1, TS.format(5))),
        "t",
        "id",
        "history",
        updated_at="u",
        full_refresh=True,
    )
    assert (result.inserted, result.total, result.versions) == (1, 1, 1)


def _files(root) -> dict:
    return {p: p.read_bytes() for p in sorted(root.rglob("*.parquet"))}


def test_parquet_datasets_keep_history_with_the_same_checks(tmp_path):
    """merge_parquet_dataset with strategy='history' (the Parquet writer of the shared flow): the
    refusals of every door leave the dataset's files byte for byte as they were, another tool's
    second current version of a key is refused naming it, a dry run writes nothing, and
    merge_history_table's row carries the versions."""
    from dbt_merge.parquet import merge_parquet_dataset

    c = duckdb.connect()
    root = tmp_path / "d"

    def merge(source, **options):
        return merge_parquet_dataset(c.sql(source), root, "id", "history", updated_at="u",
                                     connection=c, **options)

    first = merge(FIRST)
    assert (first.inserted, first.total, first.versions) == (4, 4, 4)
    before = _files(root)
    for source, match in [
        (values((1, "'x'", 1, "cast(null as timestamp)")), "updated_at column 'u' is NULL"),
        (values((1, "'x'", 1, TS.format(2)), (1, "'y'", 1, TS.format(2))), "more than once"),
        (values((1, "'old'", 1, "timestamp '2023-01-01'")), "are late"),
    ]:
        with pytest.raises(Exception, match=match):
            merge(source, late_rows="fail")
        assert _files(root) == before
    dry = merge(values((1, "'a2'", 1, TS.format(2))), dry_run=True)
    assert (dry.updated, dry.dry_run) == (1, True)
    assert _files(root) == before
    result = merge(values((1, "'a2'", 1, TS.format(2))), merge_history_table="merges")
    assert (result.updated, result.unchanged, result.total, result.versions) == (1, 0, 4, 5)
    assert c.execute("select strategy, updated, versions from merges").fetchall() == [
        ("history", 1, 5)
    ]
    got = c.execute(f"select id, v, dbt_valid_to from read_parquet('{root}/**/*.parquet') "
                    "where id = 1 order by dbt_valid_from").fetchall()
    assert [(r[0], r[1], str(r[2])) for r in got] == [
        (1, "a", "2024-01-02 00:00:00"), (1, "a2", "None")
    ]
    # another tool's file holding a second current version of key 2
    c.execute(
        "copy (select 2 as id, 'dup' as v, 1 as w, timestamp '2024-01-03' as u, 'x' as dbt_scd_id,"
        " timestamp '2024-01-03' as dbt_updated_at, timestamp '2024-01-03' as dbt_valid_from,"
        f" cast(null as timestamp) as dbt_valid_to) to '{root}/other.parquet' (format parquet)"
    )
    before = _files(root)
    with pytest.raises(Exception, match=r"more than one current version .* e\.g\. \(id\) = \(2\)"):
        merge(values((2, "'b2'", 1, TS.format(4))))
    assert _files(root) == before


@pytest.mark.parametrize("column", ["dbt_valid_to", "dbt_is_deleted", "dbt_valid_from"])
def test_a_parquet_history_partitioned_by_a_history_column_is_refused_for_that(tmp_path, column):
    """Folders another tool made by a column the history merge writes itself: refused naming
    it (red team helper-54: the message was "partition column ... is not in the source. Add it
    to the source", which the next run refuses), the files byte for byte as they were."""
    from dbt_merge.parquet import merge_parquet_dataset

    c = duckdb.connect()
    root = tmp_path / "d"
    c.execute(
        "copy (select 1 as id, 'a' as v, 1 as w, timestamp '2024-01-01' as u, 'x' as dbt_scd_id,"
        " timestamp '2024-01-01' as dbt_updated_at, timestamp '2024-01-01' as dbt_valid_from,"
        " cast(null as timestamp) as dbt_valid_to, 'False' as dbt_is_deleted)"
        f" to '{root}' (format parquet, partition_by ({column}))"
    )
    before = _files(root)
    with pytest.raises(Exception, match=f"partitioned by {column}, a column strategy 'history'"):
        merge_parquet_dataset(c.sql(values((1, "'b'", 1, TS.format(2)))), root, "id", "history",
                              updated_at="u", hard_deletes="new_record", connection=c)
    assert _files(root) == before


def test_versions_of_a_null_key_are_left_alone(con):
    """Rows with a NULL key (made outside the package) are no key's versions: not refused as two
    current versions, never matched, closed or counted as considered."""
    for _ in range(2):
        con.execute("insert into t values (null, 'n', 1, timestamp '2024-01-01', 'x', "
                    "timestamp '2024-01-01', timestamp '2024-01-01', null)")
    result = merge_table(con, values((1, "'a2'", 1, TS.format(2))), "t", "id", "history",
                         updated_at="u", hard_deletes="invalidate", max_delete_fraction=1)
    assert (result.updated, result.deleted, result.total, result.versions) == (1, 3, 3, 7)
    assert con.execute("select count(*) from t where id is null and dbt_valid_to is null"
                       ).fetchall() == [(2,)]


# ------------------------------------------------------------------ the red team's findings


def versions(con, key=1, table="t"):
    return con.execute(
        f"select v, dbt_scd_id, dbt_valid_from, dbt_valid_to from {table} where id = {key} "
        "order by dbt_valid_from, dbt_valid_to nulls last"
    ).fetchall()


def assert_sound(con, table="t"):
    """dbt_scd_id unique, and no version valid for no time."""
    assert con.execute(
        f"select dbt_scd_id from {table} group by all having count(*) > 1"
    ).fetchall() == []
    assert con.execute(
        f"select * from {table} where dbt_valid_to is not null and dbt_valid_to <= dbt_valid_from"
    ).fetchall() == []


def counts(result):
    return (result.inserted, result.updated, result.deleted, result.unchanged, result.held_back,
            result.total, result.versions)


def test_a_table_with_dbt_valid_to_current_needs_it_set():
    """A table whose current versions end at dbt_valid_to_current (a snapshot's or a model's),
    merged without it, or with another value: refused naming the value the table holds and the
    option to set; with it, merged. Versions closed at several times in the future: refused."""
    c = duckdb.connect()
    held = "cast('9999-12-31' as timestamp)"
    merge_table(c, FIRST, "t", "id", "history", updated_at="u", dbt_valid_to_current=held)
    before = rows(c)
    changed = values((1, "'a2'", 1, TS.format(2)), (2, "'b'", 1, TS.format(1)))
    fix = "dbt_valid_to_current=\"cast('9999-12-31 00:00:00' as timestamp)\""
    for setting, said in [({}, "which is not set here"), (
            {"dbt_valid_to_current": "cast('2999-12-31' as timestamp)"},
            "but dbt_valid_to_current is set to cast('2999-12-31' as timestamp)")]:
        with pytest.raises(MergeError) as raised:
            merge_table(c, changed, "t", "id", "history", updated_at="u", **setting)
        message = str(raised.value)
        assert message.startswith(
            "dbt_merge: table 't': the history table \"memory\".\"main\".\"t\" has 4 key(s) whose "
            "last version ends at 9999-12-31 00:00:00, after the run's time, e.g. (id) = (1): the "
            "table marks its current versions with dbt_valid_to = 9999-12-31 00:00:00"), message
        assert said in message and f"Set {fix}, as the snapshot or merge" in message, message
        assert message.endswith("The target was not changed.")
        assert rows(c) == before
    result = merge_table(c, changed, "t", "id", "history", updated_at="u",
                         dbt_valid_to_current="cast('9999-12-31 00:00:00' as timestamp)")
    assert counts(result) == (0, 1, 0, 1, 0, 4, 5)
    assert versions(c)[0][3].day == 2 and versions(c)[1][3].year == 9999
    # no single value: the current versions cannot be told
    c.execute("update t set dbt_valid_to = timestamp '2999-01-01' where id = 3")
    before = rows(c)
    with pytest.raises(MergeError, match=(
            r"has 4 key\(s\) whose last version is closed after the run's time \(dbt_valid_to "
            r"from 2999-01-01 00:00:00 on\), e.g. \(id\) = \(1\): no run closes a version in the "
            r"future, so the merge cannot tell which versions are current")):
        merge_table(c, changed, "t", "id", "history", updated_at="u")
    assert rows(c) == before


def test_a_new_version_starts_after_the_current_one():
    """A key back after a deletion opens at the run's time (its updated_at is older than the
    deletion); a change whose updated_at is after that updated_at but not after the run's time
    is late (before: a version valid for no time, and its dbt_scd_id twice)."""
    c = duckdb.connect()
    options = dict(updated_at="u", hard_deletes="invalidate", max_delete_fraction=1)
    merge_table(c, values((1, "'a'", 1, TS.format(1)), (2, "'b'", 1, TS.format(1))), "t", "id",
                "history", **options)
    merge_table(c, values((2, "'b'", 1, TS.format(1))), "t", "id", "history", **options)
    back = merge_table(c, values((1, "'a'", 1, "timestamp '2024-02-01'"),
                                 (2, "'b'", 1, TS.format(1))), "t", "id", "history", **options)
    assert counts(back) == (1, 0, 0, 1, 0, 2, 3)
    before = rows(c)
    later = values((1, "'a3'", 1, "timestamp '2024-03-01'"), (2, "'b'", 1, TS.format(1)))
    refused(c, later, r"1 row\(s\) of the source are late: .* e.g. \(id\) = \(1\)",
            late_rows="fail", **options)
    result = merge_table(c, later, "t", "id", "history", **options)
    assert counts(result) == (0, 0, 0, 1, 1, 2, 3)
    assert rows(c) == before
    assert [v for v, *_ in versions(c)] == ["a", "a"]
    assert_sound(c)


@pytest.mark.parametrize(
    "key, other",
    [("'x'", "'y'"), ("{'a': 'x'}", "{'a': 'y'}"), ("['x']", "['y']")],
    ids=["text", "struct", "list"],
)
def test_a_key_back_after_invalidate_opens_after_its_last_version_ends(key, other):
    """A key back after hard_deletes='invalidate' closed it, with an updated_at before that end,
    opens at the run's time, whatever the key's type (red team helper-90: a struct or list key
    opened at its updated_at, overlapping its closed version, and every later run on it was
    refused for the overlap)."""
    c = duckdb.connect()

    def merge(rows_sql, **options):
        return merge_table(c, rows_sql, "t", "k", "history", updated_at="u",
                           max_delete_fraction=1, **options)

    def row(k, v, day):
        return f"select {k} as k, '{v}' as v, timestamp '2024-01-0{day}' as u"

    merge(row(key, "p", 1) + " union all " + row(other, "p", 1))
    merge(row(other, "p", 1), hard_deletes="invalidate")
    back = merge(row(key, "r", 6))
    assert (back.inserted, back.total, back.versions) == (1, 2, 3)
    [(closed_to,)] = c.execute(f"select dbt_valid_to from t where k = {key} and v = 'p'").fetchall()
    [(opened_from,)] = c.execute(
        f"select dbt_valid_from from t where k = {key} and v = 'r'"
    ).fetchall()
    assert opened_from >= closed_to
    later = merge(row(key, "s", 7))  # late: not after the version that opened at the run's time
    assert (later.held_back, later.versions) == (1, 3)


@pytest.mark.parametrize("mode", ["invalidate", "new_record"])
def test_a_version_starting_after_the_run_is_not_closed_before_it_starts(mode):
    """A current version with an updated_at in the future, whose key leaves: its deletion is held
    back (closing it now would end it before, or when, it starts), or refused with
    late_rows='fail'; the key back with an older updated_at is late."""
    c = duckdb.connect()
    options = dict(updated_at="u", hard_deletes=mode, max_delete_fraction=1)
    merge_table(c, values((1, "'a'", 1, "timestamp '2099-01-01'"), (2, "'b'", 1, TS.format(1))),
                "t", "id", "history", **options)
    before = rows(c)
    gone = values((2, "'b'", 1, TS.format(1)))
    message = refused(c, gone, r"1 key\(s\) the source lacks have a current version in .* that "
                      r"starts at or after the run's time .* e.g. \(id\) = \(1\): hard_deletes='"
                      + mode + r"' would close it before it starts, and late_rows='fail'",
                      late_rows="fail", **options)
    assert message.endswith("The target was not changed.")
    result = merge_table(c, gone, "t", "id", "history", **options)
    assert counts(result) == (0, 0, 0, 1, 1, 2, 2)
    assert rows(c) == before
    result = merge_table(c, values((1, "'a2'", 1, "timestamp '2024-06-01'"),
                                   (2, "'b'", 1, TS.format(1))), "t", "id", "history", **options)
    assert counts(result) == (0, 0, 0, 1, 1, 2, 2)
    assert rows(c) == before
    assert_sound(c)


def test_a_key_deleted_the_day_it_starts_is_closed_the_next_day():
    """With a DATE updated_at, a key that starts today and leaves today: its deletion is held back
    (closed today, it would be valid for no day), not a version [today, today]."""
    c = duckdb.connect()
    source = ("select 1 as id, 'a' as v, current_date as u "
              "union all select 2, 'b', date '2024-01-01'")
    options = dict(updated_at="u", hard_deletes="invalidate", max_delete_fraction=1)
    merge_table(c, source, "t", "id", "history", **options)
    result = merge_table(c, "select 2 as id, 'b' as v, date '2024-01-01' as u", "t", "id",
                         "history", **options)
    assert counts(result) == (0, 0, 0, 1, 1, 2, 2)
    assert c.execute("select count(*) from t where dbt_valid_to is null").fetchall() == [(2,)]
    assert_sound(c)


def test_a_changed_row_with_the_same_updated_at_is_late():
    """updated_at alone: a row whose values differ from its current version's at the same
    updated_at is late (held back, or refused with late_rows='fail'), never unchanged; the same
    values there are unchanged. The table stays what dbt snapshot writes (no new version)."""
    c = duckdb.connect()
    merge_table(c, FIRST, "t", "id", "history", updated_at="u")
    before = rows(c)
    same_time = values((1, "'CHANGED'", 1, TS.format(1)), (2, "'b'", 1, TS.format(1)))
    refused(c, same_time, r"1 row\(s\) of the source are late: .* e.g. \(id\) = \(1\), and "
            r"late_rows='fail'", updated_at="u", late_rows="fail")
    result = merge_table(c, same_time, "t", "id", "history", updated_at="u")
    assert counts(result) == (0, 0, 0, 1, 1, 4, 4)
    assert rows(c) == before
    # a DATE updated_at: two changes on one day
    c.execute("create table d as select id, v, cast(u as date) as u from (" + FIRST + ")")
    merge_table(c, "select * from d", "dh", "id", "history", updated_at="u")
    c.execute("update d set v = 'a2' where id = 1")
    result = merge_table(c, "select * from d", "dh", "id", "history", updated_at="u")
    assert counts(result) == (0, 0, 0, 3, 1, 4, 4)


def test_with_no_column_to_compare_a_key_is_unchanged():
    """No updated_at and no column to compare (the SELECT holds the key alone, or its data
    column was renamed in the table by hand): every key unchanged, run after run."""
    c = duckdb.connect()
    c.execute("create table s as select * from (values (1, 'a'), (2, 'b')) as s(id, v)")
    merge_table(c, "select id from s", "k", "id", "history")
    merge_table(c, "select * from s", "t", "id", "history")
    c.execute("alter table t rename column v to v_renamed")
    for _ in range(2):
        for select, table in (("select id from s", "k"), ("select * from s", "t")):
            result = merge_table(c, select, table, "id", "history")
            assert counts(result) == (0, 0, 0, 2, 0, 2, 2), table
    assert c.execute("select count(*) from k where dbt_valid_to is null").fetchall() == [(2,)]


def test_two_cursors_merging_one_new_key_at_once():
    """Two merge_table calls on two cursors of one connection, both bringing the same new key:
    they take turns, so the key gets one current version (one call inserts it, the other finds it
    unchanged)."""
    import threading

    c = duckdb.connect()
    c.execute("create table s as select range as id, 'v' as v, timestamp '2024-01-01' as u "
              "from range(1000)")
    merge_table(c, "select * from s", "t", "id", "history", updated_at="u")
    c.execute("insert into s values (5000, 'new', timestamp '2024-01-02')")
    out, barrier = {}, threading.Barrier(2)

    def run(n):
        cursor = c.cursor()
        barrier.wait()
        try:
            out[n] = counts(merge_table(cursor, "select * from s", "t", "id", "history",
                                        updated_at="u"))
        finally:
            cursor.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert sorted(out.values()) == [(0, 0, 0, 1001, 0, 1001, 1001), (1, 0, 0, 1000, 0, 1001, 1001)]
    assert c.execute("select count(*), count(*) filter (where dbt_valid_to is null) from t"
                     ).fetchall() == [(1001, 1001)]
