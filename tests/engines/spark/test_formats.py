"""Spark tables without MERGE INTO: parquet, orc and Hive (parquet files), partitioned or not.

One generated project, run three times in the shared Spark session: a first run builds every
table from the initial SELECT (with its partition_by), the second merges the increment, the third
merges it again. Each model's rows and statistics must equal the reference merge, only the
partitions whose rows change may be rewritten (their files are compared before and after), and
the rerun must write nothing. Iceberg models built the same way (partition_by, a bucket transform)
are checked alongside: copy-on-write and merge-on-read tables (`write.merge.mode`, `.update.mode`,
`.delete.mode` = merge-on-read, set by tblproperties), every strategy and delete_condition, and
full_merge written both ways (full_merge_write: one MERGE INTO, or an INSERT OVERWRITE of the
merged table), with and without incremental_predicates, and tables of format version 3
(copy-on-write, partitioned by a column or a bucket, and merge-on-read), which merge_on_branch
writes once into a branch and counts from the commit.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from dbt_helpers import run_dbt
from support.harness import PROFILES_DIR, make_project, model_sql, spark_schema
from support.reference import Options, canonical, merge

pytestmark = pytest.mark.spark

SCHEMA = "rel_fmt"
SRC = "rel_fmt_src"
KEY = ["id"]
COLUMNS = [("id", "int"), ("name", "str"), ("amount", "float"), ("ts", "ts"), ("region", "str")]
NAMES = [c for c, _ in COLUMNS]
T0 = dt.datetime(2024, 1, 1, 8, 30, 15, 123456)
T1 = dt.datetime(2024, 2, 1, 9, 0, 0, 654321)


def _row(id_, region, name, amount, ts=T0):
    return {"id": id_, "name": name, "amount": amount, "ts": ts, "region": region}


#: values a rewrite must give back exactly: rows 1 and 4 stay as they are in partitions that are
#: rewritten (-0.0, NaN, a name of quotes, a backslash, a newline and non-ASCII characters,
#: timestamps to the microsecond)
ODD_NAME = "it's \\ \"d\"\né中😀"
TARGET = [
    _row(1, "eu", "a", -0.0),
    _row(2, "eu", "b", 2.0),
    _row(3, "us", "c", 3.0),
    _row(4, "us", ODD_NAME, float("nan")),
    _row(5, "apac", "e", 5.0),  # in the source unchanged: apac is never rewritten
    _row(6, None, "f", 6.0),  # the NULL partition
    _row(7, "latam", "g", 7.0),  # alone in latam; full_merge deletes it (latam emptied)
    _row(8, "africa", "h", 8.0),  # alone in africa; full_merge deletes it
    _row(12, "oceania", "l", 12.0),  # alone in oceania; updates move it to eu (oceania emptied)
]
SOURCE = [
    _row(1, "eu", "a", -0.0),  # unchanged
    _row(2, "eu", "b2", 2.5, T1),  # updated in its partition
    _row(3, "eu", "c", 3.0),  # updated: moves from us to eu
    _row(5, "apac", "e", 5.0),  # unchanged
    _row(6, None, "f2", 6.5),  # updated in the NULL partition
    _row(9, "us", "i", 9.0, T1),  # inserted into an existing partition
    _row(10, "mena", "j", 10.0),  # inserted into a new partition
    _row(11, None, "k", 11.0),  # inserted into the NULL partition
    _row(12, "eu", "l", 12.0),  # updated: moves out of oceania, its only row
]
STRATEGIES = ["upsert", "insert", "update", "full_merge", "deduplicate"]
HIVE = {"file_format": "hive", "options": {"fileFormat": "parquet"}}


class NotLatam(Options):
    """incremental_predicates = DBT_INTERNAL_DEST.region <> 'latam' (NULL: outside)."""

    def in_scope(self, target_row):
        return target_row["region"] is not None and target_row["region"] != "latam"


@dataclass
class Model:
    config: dict
    select: str = "select * from {s}"  # the increment's SELECT, over {s}: the source's rows
    initial: str = "select * from {t}"  # the first run's SELECT, over {t}: the target's rows
    strategy: str = ""
    source: list = field(default_factory=lambda: SOURCE)
    target: list = field(default_factory=lambda: TARGET)
    opts: Options = field(default_factory=Options)
    #: the first run also loads a row of id 99 (WITH_DELETED_ROW), which the fixture then
    #: deletes (on a merge-on-read table: a position delete file the merge must honour)
    deleted_row: bool = False

    def expected(self):
        key = self.config.get("unique_key", KEY)
        return merge(self.config["strategy"], self.source, self.target,
                     key if isinstance(key, list) else [key], self.opts)


def _model(strategy: str, **config) -> Model:
    return Model({"strategy": strategy, **config})


def _part(config: dict) -> dict:
    return {**config, "partition_by": "region"}


PARQUET = {"file_format": "parquet"}
MODELS: dict[str, Model] = {}
for _strategy in STRATEGIES:
    for _prefix, _config in (("pq", PARQUET), ("pqp", _part(PARQUET)), ("hvp", _part(HIVE))):
        if _prefix == "hvp" and _strategy not in ("upsert", "full_merge"):
            continue  # Hive tables take the same SQL: two strategies suffice
        MODELS[f"{_prefix}_{_strategy}"] = _model(_strategy, **_config)
        if _strategy == "deduplicate":  # an identical repeat of a key collapses
            MODELS[f"{_prefix}_{_strategy}"].select = (
                "select * from {s} union all select * from {s} where id = 9")
            MODELS[f"{_prefix}_{_strategy}"].source = [*SOURCE, SOURCE[5]]
MODELS |= {
    "pq_default_format": _model("upsert"),  # no file_format: dbt-spark's default, parquet
    "orcp_full_merge": _model("full_merge", **_part({"file_format": "orc"})),
    "hv_full_merge": _model("full_merge", **HIVE),
    # the row images (merge_update_columns): region is not updated, so no row moves
    "pqp_update_columns": Model(
        _part({**PARQUET, "strategy": "full_merge", "merge_update_columns": ["name", "amount"]}),
        opts=Options(update_columns=["name", "amount"])),
    # a NULL predicate keeps the row (id 6, in the NULL partition, which id 11 rewrites)
    "pqp_predicates": Model(
        _part({**PARQUET, "strategy": "full_merge",
               "incremental_predicates": ["DBT_INTERNAL_DEST.region <> 'latam'"]}),
        select="select * from {s} where id <> 6",
        source=[r for r in SOURCE if r["id"] != 6], opts=NotLatam()),
    # a target column the SELECT lacks: NULL in inserted rows
    "pqp_insert_missing_column": Model(
        _part({**PARQUET, "strategy": "insert"}), select="select id, name, amount, region from {s}",
        source=[{**r, "ts": None} for r in SOURCE]),
    # the partition column in a composite key (a key with a NULL is refused: left out)
    "pqp_key_with_partition": Model(
        _part({**PARQUET, "strategy": "upsert", "unique_key": ["region", "id"]}),
        select="select * from {s} where region is not null",
        initial="select * from {t} where region is not null",
        source=[r for r in SOURCE if r["region"] is not None],
        target=[r for r in TARGET if r["region"] is not None]),
    "ice_upsert": _model("upsert", **_part({"file_format": "iceberg"})),
    "ice_full_merge": _model("full_merge", file_format="iceberg", partition_by=["bucket(4, id)"]),
}
#: Iceberg merge-on-read: every strategy and delete_condition; full_merge both ways
MOR = {"write.merge.mode": "merge-on-read", "write.update.mode": "merge-on-read",
       "write.delete.mode": "merge-on-read"}
ICEBERG_MOR = {"file_format": "iceberg", "tblproperties": MOR}
#: the target's rows and one of id 99, written by one task so that row 99 shares a data file
#: with others (a delete of a whole file drops the file instead of writing a delete file)
WITH_DELETED_ROW = ("select /*+ COALESCE(1) */ * from (select * from {t} union all select"
                    " cast(99 as bigint), 'zz', cast(0 as double), cast(null as timestamp), 'eu')"
                    " as rows_and_deleted_row")
for _strategy in STRATEGIES:
    _m = _model(_strategy, **(_part(ICEBERG_MOR) if _strategy == "upsert" else ICEBERG_MOR))
    _m.initial, _m.deleted_row = WITH_DELETED_ROW, True
    if _strategy == "deduplicate":
        _m.select, _m.source = MODELS["pq_deduplicate"].select, MODELS["pq_deduplicate"].source
    MODELS[f"ice_mor_{_strategy}"] = _m
#: full_merge with every matched row updated (none left as it is): full_merge_write='auto'
#: overwrites; the same forced to MERGE INTO
MODELS["ice_mor_full_merge"].config["detect_unchanged"] = False
MODELS["ice_mor_full_merge"].opts = Options(detect_unchanged=False)
MODELS["ice_mor_full_merge_merge"] = Model({**MODELS["ice_mor_full_merge"].config,
                                            "full_merge_write": "merge"},
                                           initial=WITH_DELETED_ROW, deleted_row=True,
                                           opts=Options(detect_unchanged=False))
MODELS["ice_mor_cdc"] = Model({**ICEBERG_MOR, "strategy": "upsert",
                               "delete_condition": "DBT_INTERNAL_SOURCE.amount = 2.5"},
                              opts=Options(delete_condition=("amount", 2.5)))
#: full_merge with incremental_predicates, auto and forced to overwrite: both by MERGE INTO, the
#: table being partitioned (its overwrite would need static partition overwrite mode, a session
#: setting every dbt thread would share; the second run goes with the session in dynamic mode, in
#: which an overwrite would keep the partition it empties, africa)
for _name, _write in (("ice_predicates", "auto"), ("ice_predicates_overwrite", "overwrite")):
    MODELS[_name] = Model(
        _part({"file_format": "iceberg", "strategy": "full_merge", "full_merge_write": _write,
               "incremental_predicates": ["DBT_INTERNAL_DEST.region <> 'latam'"]}),
        select="select * from {s} where id <> 6",
        source=[r for r in SOURCE if r["id"] != 6], opts=NotLatam())
#: Iceberg format version 3 (row lineage; copy-on-write needs the session's SQL extensions):
#: written once into a branch and counted from the commit (merge_on_branch), partitioned too
V3 = {"format-version": "3"}
MODELS["ice_v3_upsert"] = _model("upsert", **_part({"file_format": "iceberg", "tblproperties": V3}))
MODELS["ice_v3_full_merge"] = _model("full_merge", file_format="iceberg", tblproperties=V3,
                                     partition_by=["bucket(4, id)"])
MODELS["ice_v3_mor_insert"] = _model("insert", file_format="iceberg", tblproperties={**MOR, **V3})
#: the write each full_merge model on Iceberg must have chosen (logged by choose_full_merge_write)
FULL_MERGE_WRITES = {
    "ice_full_merge": "MERGE INTO",  # rows 1 and 5 are unchanged
    "ice_mor_full_merge": "INSERT OVERWRITE", "ice_mor_full_merge_merge": "MERGE INTO",
    "ice_predicates": "MERGE INTO", "ice_predicates_overwrite": "MERGE INTO",
}
#: tables that exist before the first run in another format than the model's file_format
#: (created outside dbt): the merge writes the table that exists
PRE_EXISTING = {"was_parquet": ("parquet", "iceberg"), "was_iceberg": ("iceberg", "parquet")}
for _name, (_real, _configured) in PRE_EXISTING.items():
    MODELS[_name] = _model("full_merge", file_format=_configured)


#: models run a third time, with the same increment
RERUN = ["pq_upsert", "pqp_full_merge", "pqp_update_columns", "hvp_upsert", "was_parquet",
         "ice_mor_upsert", "ice_mor_update", "ice_v3_upsert"]


def _partition_dir(value) -> str:
    return "region=" + ("__HIVE_DEFAULT_PARTITION__" if value is None else value)


def _location(spark, table: str) -> Path:
    rows = spark.sql(f"describe table extended {table}").collect()
    url = next(r.data_type for r in rows if r.col_name == "Location")
    return Path(unquote(urlparse(url).path))


def _data_files(spark, table: str) -> dict[str, list[tuple[str, int]]]:
    """{partition directory ('' for the table's own): [(data file, mtime ns)]}"""
    root = _location(spark, table)
    out: dict[str, list] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        data = [f for f in files if not f.startswith((".", "_"))]
        if data:
            rel = os.path.relpath(folder, root)
            out["" if rel == "." else rel] = sorted(
                (f, os.stat(os.path.join(folder, f)).st_mtime_ns) for f in data)
    return out


def _rows(spark, table: str) -> tuple[list[str], list[dict]]:
    spark.sql(f"refresh table {table}")
    df = spark.table(table)
    return df.columns, [r.asDict() for r in df.collect()]


def _delete_files(spark, table: str) -> int:
    return spark.sql(f"select count(*) from {table}.delete_files").collect()[0][0]


def _last_snapshot(spark, table: str) -> dict[str, str]:
    """The summary of the table's current snapshot."""
    return spark.sql(f"select summary from {table}.snapshots order by committed_at desc limit 1"
                     ).collect()[0][0]


def _describe(spark, table: str) -> dict[str, str]:
    rows = spark.sql(f"describe table extended {table}").collect()
    return {r.col_name: r.data_type for r in rows}


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    spark.sql(f"create database if not exists {SCHEMA}")
    spark.sql(f"create database if not exists {SRC}")
    for name in MODELS:
        spark.sql(f"drop table if exists {SCHEMA}.{name}")
    schema = spark_schema(COLUMNS)
    for view, rows in (("t", TARGET), ("s", SOURCE)):
        spark.createDataFrame([[r[c] for c in NAMES] for r in rows], schema) \
            .createOrReplaceGlobalTempView(f"{SRC}_{view}")
    for name, (real, _) in PRE_EXISTING.items():
        spark.sql(f"create table {SCHEMA}.{name} using {real} as select * from global_temp.{SRC}_t")
    models = {}
    for name, m in MODELS.items():
        body = m.select.format(s=f"global_temp.{SRC}_s")
        if name not in PRE_EXISTING:
            initial = m.initial.format(t=f"global_temp.{SRC}_t")
            body = f"{{% if var('phase') == 'initial' %}}{initial}{{% else %}}{body}{{% endif %}}"
        models[name] = model_sql({"unique_key": "id", **m.config, "schema": SCHEMA}, body)
    project = make_project(tmp_path_factory.mktemp("fmt") / "proj", "formats", models,
                           vars={"phase": "initial"})
    first = run_dbt(["run", "--exclude", *PRE_EXISTING], project, "spark", PROFILES_DIR)
    built = {name: _describe(spark, f"{SCHEMA}.{name}") for name in MODELS}
    for name, m in MODELS.items():
        if m.deleted_row:
            spark.sql(f"delete from {SCHEMA}.{name} where id = 99")
    delete_files = {name: _delete_files(spark, f"{SCHEMA}.{name}") for name in MODELS
                    if name.startswith("ice_mor_")}
    before = {name: _data_files(spark, f"{SCHEMA}.{name}") for name in MODELS
              if not name.startswith("ice_")}
    mode = "spark.sql.sources.partitionOverwriteMode"
    # an unpartitioned overwrite of at least one row replaces all in either mode
    spark.conf.set(mode, "dynamic")
    try:
        second = run_dbt(["run"], project, "spark", PROFILES_DIR, vars={"phase": "increment"})
    finally:
        spark.conf.unset(mode)
    after = {name: _data_files(spark, f"{SCHEMA}.{name}") for name in before}
    rows = {name: _rows(spark, f"{SCHEMA}.{name}") for name in MODELS}
    written = {name: _last_snapshot(spark, f"{SCHEMA}.{name}") for name in MODELS
               if name.startswith("ice_mor_")}
    third = run_dbt(["run", "--select", *RERUN], project, "spark", PROFILES_DIR,
                    vars={"phase": "increment"})
    again = {name: _data_files(spark, f"{SCHEMA}.{name}") for name in RERUN
             if not name.startswith("ice_")}
    rerun_rows = {name: _rows(spark, f"{SCHEMA}.{name}") for name in RERUN}
    refresh = run_dbt(["run", "--full-refresh", "--select", "ice_mor_cdc"], project, "spark",
                      PROFILES_DIR, vars={"phase": "increment"})
    refreshed = _describe(spark, f"{SCHEMA}.ice_mor_cdc")
    return {"first": first, "second": second, "third": third, "built": built, "before": before,
            "after": after, "again": again, "rows": rows, "project": project,
            "delete_files": delete_files, "written": written, "rerun_rows": rerun_rows,
            "refresh": refresh, "refreshed": refreshed}


def test_first_run_builds_the_configured_format_and_partitions(runs):
    first, built = runs["first"], runs["built"]
    for name, m in MODELS.items():
        if name in PRE_EXISTING:
            continue
        cfg = m.config
        assert first.stats(name)["inserted"] == len(m.target) + m.deleted_row, name
        info = built[name]
        fmt = cfg.get("file_format", "parquet")
        if fmt == "hive":
            assert info["Provider"] == "hive" and "Parquet" in info["InputFormat"], (name, info)
        else:
            assert info["Provider"] == fmt, (name, info)
        if cfg.get("partition_by") and fmt != "iceberg":
            assert "# Partition Information" in info and info.get("region") == "string", name
        elif fmt != "iceberg":
            assert "# Partition Information" not in info, name
    assert "# Partition Information" in built["ice_upsert"], built["ice_upsert"]
    assert built["ice_full_merge"].get("Part 0") == "bucket(4, id)"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_merge_equals_the_reference(runs, name):
    expected, stats = MODELS[name].expected()
    assert runs["second"].stats(name) == stats.as_dict()
    names, got = runs["rows"][name]
    assert names == NAMES
    assert canonical(got, NAMES) == canonical(expected, NAMES)


def test_rewritten_rows_keep_their_values(runs):
    """Rows a merge leaves alone in a rewritten partition keep their exact values."""
    for name in ("pq_upsert", "pqp_upsert", "hvp_upsert", "orcp_full_merge"):
        rows = {r["id"]: r for r in runs["rows"][name][1]}
        assert math.copysign(1.0, rows[1]["amount"]) == -1.0, name
        assert rows[1]["ts"] == T0, name
        if 4 in rows:
            assert math.isnan(rows[4]["amount"]) and rows[4]["name"] == ODD_NAME, name


def test_formats_agree_with_iceberg(runs):
    for strategy, iceberg in (("upsert", "ice_upsert"), ("full_merge", "ice_full_merge")):
        for layout in ("pq", "pqp", "hvp"):
            name = f"{layout}_{strategy}"
            assert runs["second"].stats(name) == runs["second"].stats(iceberg), name
            assert canonical(runs["rows"][name][1], NAMES) == canonical(
                runs["rows"][iceberg][1], NAMES), name


PARTITIONED = sorted(n for n in MODELS if n.split("_")[0] in ("pqp", "hvp", "orcp"))


@pytest.mark.parametrize("name", PARTITIONED)
def test_only_changed_partitions_are_rewritten(runs, name):
    """A partition whose rows do not change keeps its files (names and modification times);
    one whose rows change gets new files, or disappears when no row is left in it."""
    expected, _ = MODELS[name].expected()
    before_rows = canonical(MODELS[name].target, NAMES)
    after_rows = canonical(expected, NAMES)
    changed = {tuple(r) for r in before_rows} ^ {tuple(r) for r in after_rows}
    region = NAMES.index("region")
    touched = {_partition_dir(None if t[region] == (0,) else t[region][2]) for t in changed}
    before, after = runs["before"][name], runs["after"][name]
    assert before, name
    for part, files in before.items():
        if part in touched:
            assert after.get(part) != files, f"{name}: {part} was not rewritten"
        else:
            assert after.get(part) == files, f"{name}: {part} was rewritten"
    remaining = {_partition_dir(r["region"]) for r in expected}
    assert set(after) == remaining, name


@pytest.mark.parametrize("name", sorted(n for n in MODELS if n.startswith(("pq_", "hv_"))))
def test_unpartitioned_table_is_rewritten_whole(runs, name):
    assert list(runs["before"][name]) == [""] and list(runs["after"][name]) == [""]
    assert runs["after"][name][""] != runs["before"][name][""]


def test_rerun_writes_nothing(runs):
    third = runs["third"]
    for name in RERUN:
        stats = third.stats(name)
        assert (stats["inserted"], stats["updated"], stats["deleted"]) == (0, 0, 0), name
        assert canonical(runs["rerun_rows"][name][1], NAMES) == canonical(
            runs["rows"][name][1], NAMES), name
    for name, files in runs["again"].items():
        assert files == runs["after"][name], f"{name}: files changed by a run with no change"


def test_merge_on_read_tables_are_written_merge_on_read(runs):
    """The merge-on-read models are what they claim: built with their tblproperties (by the
    first run and a full refresh), holding a position delete file before the merge, and every
    MERGE that updated or deleted rows wrote delete files instead of rewriting data files."""
    for name, m in MODELS.items():
        if not name.startswith("ice_mor_"):
            continue
        info = runs["built"][name]
        assert all(f"{k}={v}" in info["Table Properties"] for k, v in MOR.items()), info
        assert runs["delete_files"][name] >= m.deleted_row, name
        expected, stats = m.expected()
        if FULL_MERGE_WRITES.get(name) != "INSERT OVERWRITE" and stats.updated + stats.deleted:
            summary = runs["written"][name]
            assert int(summary.get("added-position-deletes", 0)) > 0, (name, summary)
            assert "deleted-data-files" not in summary, (name, summary)
    refreshed = runs["refreshed"]["Table Properties"]
    assert runs["refresh"].stats("ice_mor_cdc")["inserted"] == len(SOURCE) - 1
    assert all(f"{k}={v}" in refreshed for k, v in MOR.items()), refreshed


def test_full_merge_write_choice(runs):
    """full_merge on Iceberg writes as full_merge_write says: forced, or by the counts
    (INSERT OVERWRITE when every matched row is updated, MERGE INTO when some are unchanged),
    and by MERGE INTO with incremental_predicates. Both writes leave the same table."""
    log = (runs["project"] / "logs" / "dbt.log").read_text()
    for name, write in FULL_MERGE_WRITES.items():
        lines = [line for line in log.splitlines()
                 if f"dbt_merge {SCHEMA}.{name}: full_merge_write=" in line]
        assert len(lines) == 1 and lines[0].endswith(f": {write}"), (name, lines)
    for a, b in (("ice_mor_full_merge", "ice_mor_full_merge_merge"),
                 ("ice_predicates", "ice_predicates_overwrite")):
        assert runs["second"].stats(a) == runs["second"].stats(b), (a, b)
        assert canonical(runs["rows"][a][1], NAMES) == canonical(runs["rows"][b][1], NAMES)


def test_existing_format_wins_over_file_format(runs, spark):
    """A table created outside dbt in another format is merged as the table it is; the log says
    so, and the table keeps its format."""
    log = (runs["project"] / "logs" / "dbt.log").read_text()
    for name, (real, configured) in PRE_EXISTING.items():
        assert _describe(spark, f"{SCHEMA}.{name}")["Provider"] == real, name
        assert (f"is a {real} table but file_format is {configured}: it is merged as the table "
                f"it is") in log, name


def test_no_work_table_left(runs, spark):
    """No work table is left in the schema. (`show tables` also lists the session's temporary
    views: those of runs in other tests that failed on purpose stay until the session ends.)"""
    rows = spark.sql(f"show tables in {SCHEMA}").collect()
    names = [r.tableName for r in rows if not r.isTemporary]
    assert [n for n in names if "__dbt_merge" in n] == []
