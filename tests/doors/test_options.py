"""One option table for the Python doors (dbt_merge.options): merge_dataframe, merge_table
and merge_parquet_dataset take the same keywords, named as the dbt config names them, checked
by one function; and what the doors say, in Python's words (dbt_merge.render.source_wording):
every message of the shared macros, the catalogue's, and merge_table's own on DuckDB."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from dbt_merge.duckdb import merge_table
from dbt_merge.errors import MergeError
from dbt_merge.options import OPTIONS, MergeOptions, merge_config
from dbt_merge.parquet import merge_parquet_dataset
from dbt_merge.render import source_wording
from dbt_merge.spark import merge_dataframe

ROOT = Path(__file__).resolve().parents[2]


def test_every_door_takes_the_one_option_table():
    for door in (merge_dataframe, merge_table, merge_parquet_dataset):
        options = inspect.signature(door).parameters["options"]
        assert options.kind is inspect.Parameter.VAR_KEYWORD
        assert "MergeOptions" in str(options.annotation), door
    assert set(OPTIONS) == set(MergeOptions.__annotations__)


def test_every_option_is_a_dbt_config_key():
    keys = set(
        re.findall(r"'(\w+)'", (ROOT / "macros/validation/merge_config_keys.sql").read_text())
    )
    table_only = {"file_format", "tblproperties", "options", "full_refresh"}  # dbt's own keys
    assert set(OPTIONS) - table_only <= keys


def test_merge_config():
    cfg = merge_config(["id"], "upsert", {"dry_run": True, "merge_update_columns": None})
    assert cfg == {
        "strategy": "upsert",
        "unique_key": ["id"],
        "dry_run": True,
        "detect_unchanged": True,
        "max_delete_fraction": 0.5,
        "on_schema_change": "ignore",
    }
    with pytest.raises(
        MergeError,
        match=r"unknown option 'on_schema_chnage' \(did you mean "
        r"'on_schema_change'\?\)",
    ):
        merge_config("id", "upsert", {"on_schema_chnage": "fail"})
    refused = {"file_format": (("parquet",), "is not for files.")}
    assert "file_format" not in merge_config("id", "upsert", {}, refused=refused)
    assert merge_config("id", "upsert", {"file_format": "parquet"}, refused=refused)
    with pytest.raises(MergeError, match=r"^file_format='delta' is not for files\.$"):
        merge_config("id", "upsert", {"file_format": "delta"}, refused=refused)


def test_a_misspelt_keyword_names_the_door_keyword():
    """The doors refuse every keyword they do not know (a dbt model fails on a misspelt config
    key too, and only warns on one far from every known key, which a Python call cannot have);
    the closest name is found as the macros find it, among the door's own keywords too, and
    dbt's unique_key is pointed to key_columns."""
    for given, message in [
        ("stratgy", "unknown option 'stratgy' (did you mean 'strategy'?)"),
        ("Dry_Run", "unknown option 'Dry_Run' (did you mean 'dry_run'?)"),
        ("key_column", "unknown option 'key_column' (did you mean 'key_columns'?)"),
        ("unique_key", "unknown option 'unique_key': the key is key_columns= here "
                       "('unique_key' is its name in a dbt model's config)."),
        ("owner_team", "unknown option 'owner_team'. The options are: "),
    ]:
        with pytest.raises(MergeError, match="^" + re.escape(message)):
            merge_config("id", "upsert", {given: "x"})
    # the same through a door, whose wording leaves the caller's own word as it was
    import duckdb

    con = duckdb.connect()
    for given, message in [
        ("unique_key", "unknown option 'unique_key': the key is key_columns= here "
                       "('unique_key' is its name in a dbt model's config)."),
        ("stratgy", "unknown option 'stratgy' (did you mean 'strategy'?)"),
    ]:
        with pytest.raises(MergeError, match="^" + re.escape("dbt_merge: table 't': "
                                                             + message)):
            merge_table(con, "select 1 as id", "t", "id", **{given: "id"})
    assert con.execute("select count(*) from duckdb_tables()").fetchone() == (0,)


# --- Python doors speak Python -------------------------------------------------------------------

#: words of a dbt model's messages that a Python door's message must not carry
DBT_WORDS = ("config(", "--full-refresh", "full-refresh", "unique_key", "model's SELECT",
             "the SELECT", "The SELECT", "the model", "this model", "dbt runs")
#: macros whose messages no door can raise: a door refuses an unknown keyword itself
NOT_FOR_DOORS = {"check_config_keys.sql"}
_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'')


def _macro_messages() -> list[tuple[str, str]]:
    """Each message a macro the doors render raises, its literals joined as Jinja joins them
    (`"a " ~ "b"`, also across a parenthesis) and every expression between them as X."""
    from dbt_merge.render import MACRO_FOLDERS

    found = []
    for folder in MACRO_FOLDERS:
        for path in sorted((ROOT / "macros" / folder).glob("*.sql")):
            if path.name in NOT_FOR_DOORS:
                continue
            source = path.read_text()
            for call in re.finditer(r"raise_merge_error\(|raise_compiler_error\(", source):
                depth, end = 1, call.end()
                while depth:
                    depth += {"(": 1, ")": -1}.get(source[end], 0)
                    end += 1
                body, text, last = source[call.end(): end - 1], "", 0
                for literal in _LITERAL.finditer(body):
                    between = body[last: literal.start()]
                    text += "" if re.fullmatch(r"[\s~(]*", between) else "X"
                    text += literal.group(1) if literal.group(1) is not None else literal.group(2)
                    last = literal.end()
                if text:
                    found.append((f"{folder}/{path.name}", text))
    return found


def test_every_macro_message_reads_right_through_a_door():
    messages = _macro_messages()
    assert len(messages) > 60, len(messages)
    for where, message in messages:
        for source in ("the source", "the DataFrame"):
            text = source_wording(message, source)
            left = [w for w in DBT_WORDS if w in text]
            assert not left, (where, left, text)
    # and dbt models keep dbt's words: the wording is the doors' alone
    assert any("Set config(unique_key='id')" in m for _, m in messages)
    assert any("--full-refresh" in m for _, m in messages)


def test_every_catalogue_message_reads_right_through_a_door():
    from support.catalogue import CATALOGUE

    for bad in CATALOGUE:
        excerpts = [bad.message] if isinstance(bad.message, str) else bad.message.values()
        for excerpt in excerpts:
            text = source_wording(excerpt, "the source")
            assert not [w for w in DBT_WORDS if w in text], (bad.id, text)


def test_the_doors_messages_in_python_words():
    """What merge_table raises (the door's own path) for the catalogue's bad inputs on DuckDB:
    each the catalogue's message in the door's wording, with no dbt word left."""
    import duckdb
    from support.catalogue import CATALOGUE
    from support.harness import duckdb_create

    con = duckdb.connect()
    con.execute("create schema s")
    seen = 0
    for bad in CATALOGUE:
        if "duckdb" not in bad.engines or not bad.ours:
            continue
        config = dict(bad.config)
        key = config.pop("unique_key", None)
        strategy = config.pop("strategy", "upsert")
        config.pop("pre_hook", None)
        duckdb_create(con, "s.t", bad.target_cols, bad.target_rows)
        duckdb_create(con, "s.src", bad.source_cols, bad.source_rows)
        before = con.execute("select * from s.t order by all").fetchall()
        with pytest.raises(MergeError) as error:
            merge_table(con, bad.select_sql("duckdb", "s.src"), "s.t",
                        key if key is not None else [], strategy, **config)
        message = str(error.value)
        assert message.startswith("dbt_merge: table 's.t': "), message
        assert source_wording(bad.excerpt("duckdb"), "the source") in message, (bad.id, message)
        assert not [w for w in DBT_WORDS if w in message], (bad.id, message)
        assert con.execute("select * from s.t order by all").fetchall() == before, bad.id
        seen += 1
    assert seen > 40, seen


def test_a_location_model_sends_every_option_and_its_job_passes_each_on():
    """The option list has one source (dbt_merge.options.OPTIONS): the location job's macro
    (parquet_dataset_job.sql) sends each option a dataset can take, and the job
    (parquet/dbt_job.PASSED) passes each it is sent on to the door, so that an option added to
    the package cannot be dropped silently on the way to a Parquet dataset."""
    from dbt_merge.parquet.api import REFUSED
    from dbt_merge.parquet.dbt_job import PASSED

    text = (ROOT / "macros" / "parquet" / "parquet_dataset_job.sql").read_text()
    start = text.index("{% set args = {")
    sent = set(re.findall(r"^\s*'(\w+)':", text[start:text.index("} %}", start)], re.M))
    assert set(OPTIONS) - sent <= set(REFUSED), set(OPTIONS) - sent - set(REFUSED)
    # full_refresh is the door's own argument (dbt's --full-refresh, or the model's config)
    assert (sent & set(OPTIONS)) - {"full_refresh"} == set(PASSED)
