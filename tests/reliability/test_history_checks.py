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
    refused(con, twice, "occur more than once", updated_at="u")
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
    refused(
        con,
        FIRST,
        r"1 version\(s\) whose validity .* overlaps the next version of the key, ends before "
        r"it starts, or has no start, e.g. \(id\) = \(3\)",
        updated_at="u",
    )
    con.execute("update t set dbt_valid_to = timestamp '2023-01-01' where v = 'old'")
    refused(con, FIRST, r"e.g. \(id\) = \(3\)", updated_at="u")  # ends before it starts


def test_late_rows_are_held_back_and_counted_or_refused(con):
    late = values((1, "'older'", 1, "timestamp '2023-12-31'"), (2, "'b'", 1, TS.format(1)))
    refused(
        con,
        late,
        r"1 row\(s\) of the source are late: older than their key's current version .* "
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


def test_parquet_datasets_refuse_history(tmp_path):
    from dbt_merge.parquet import merge_parquet_dataset

    with pytest.raises(
        Exception, match="strategy 'history' is not supported on Parquet datasets yet"
    ):
        merge_parquet_dataset(FIRST, str(tmp_path / "d"), "id", "history")
    assert not (tmp_path / "d").exists()


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
