"""incremental_predicates on a dataset whose files hold one key both inside and outside the
predicates (issue 30 item 9).

A dataset row outside the predicates is not considered: the merge never matches, updates or
deletes it, even when a considered row of the same key sits in the same file. The rewrite of a
file joined the source on the key only, so the matched action was applied to both rows of such
a key (an upsert wrote the key twice with the source's values and lost the outside row;
delete_condition deleted both; the reported total was not the dataset's row count).

Generated with hypothesis (derandomized: the same cases on every run), checked against the
reference model (tests/support/reference.py): every strategy, with and without
delete_condition and merge_update_condition, on_key_outside_predicates fail or insert, the rows
of one key in the same file or in two, flat or partitioned by a value column.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from dbt_merge.parquet import ParquetMergeError, run_merge
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from suite_summary import record_cases
from support.cases import _without_local_constants
from support.reference import MergeError, Options, canonical, merge

from .datasets import fingerprint, read_dataset

COLUMNS = ["id", "v", "w", "op"]
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("w", pa.string()), ("op", pa.int64())])
STRATEGIES = ["upsert", "insert", "update", "full_merge", "deduplicate"]
#: the reference model's error kinds, as the package words them on this door
EXCERPTS = {
    "target_duplicate_key": "already holds",
    "key_outside_predicates": "outside incremental_predicates",
    "mass_delete": "max_delete_fraction",
}
EXAMPLES = 90
SEEN: list[tuple[str, bool, bool]] = []  # (strategy, refused, a source key held in and out)


@st.composite
def cases(draw):
    """A dataset holding keys 0..7 once inside the predicate (v >= cut), once outside, or both
    (in one file or two), some NULL keys; a source of unique keys; the options."""
    cut = draw(st.integers(10, 30))
    inside = st.integers(cut, cut + 20)
    outside = st.integers(0, cut - 1)
    labels = st.sampled_from(["a", "b", "c"])
    target, files = [], []
    for key in range(8):
        kind = draw(st.sampled_from(["none", "in", "out", "both", "both"]))
        for where in {"in": ["in"], "out": ["out"], "both": ["in", "out"]}.get(kind, []):
            v = draw(inside if where == "in" else outside)
            target.append({"id": key, "v": v, "w": draw(labels), "op": 0})
            files.append(draw(st.integers(0, 2)))
    for _ in range(draw(st.integers(0, 2))):  # rows whose key is NULL: never matched
        target.append({"id": None, "v": draw(inside), "w": draw(labels), "op": 0})
        files.append(draw(st.integers(0, 2)))
    keys = draw(st.lists(st.integers(0, 9), unique=True, max_size=8))
    source = [
        {
            "id": k,
            "v": draw(st.integers(0, cut + 25)),
            "w": draw(labels),
            "op": draw(st.integers(0, 1)),
        }
        for k in keys
    ]
    strategy = draw(st.sampled_from(STRATEGIES))
    updates = strategy != "insert"
    return {
        "strategy": strategy,
        "cut": cut,
        "target": target,
        "files": files,
        "source": source,
        "delete": updates and draw(st.booleans()),
        "condition": updates and draw(st.booleans()),
        "on_key_outside": draw(st.sampled_from([None, "insert"])),
        "partitioned": bool(target) and draw(st.integers(0, 3)) == 0,
    }


def write(root: Path, case: dict) -> None:
    rows, files = case["target"], case["files"]
    root.mkdir(parents=True)
    if case["partitioned"]:
        con = duckdb.connect()
        con.register("t", pa.Table.from_pylist(rows, schema=SCHEMA))
        con.execute(f"copy t to '{root}' (format parquet, partition_by (w))")
        con.close()
        return
    for n in sorted(set(files)) or [0]:
        chunk = [r for r, f in zip(rows, files, strict=True) if f == n]
        pq.write_table(pa.Table.from_pylist(chunk, schema=SCHEMA), root / f"part-{n}.parquet")


def held_twice(case: dict) -> bool:
    """Does the source hold a key the dataset holds inside and outside the predicates?"""
    keys = [r["id"] for r in case["target"]]
    return any(keys.count(r["id"]) == 2 for r in case["source"])


def expected(case: dict):
    opts = Options(
        predicate=("v", case["cut"]),
        on_key_outside=case["on_key_outside"],
        max_delete_fraction=1,
        update_condition="v" if case["condition"] else None,
        delete_condition=("op", 1) if case["delete"] else None,
    )
    try:
        return merge(case["strategy"], case["source"], case["target"], ["id"], opts)
    except MergeError as e:
        return e


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(cases())
def run_case(case: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ds"
        write(root, case)
        options = {
            "strategy": case["strategy"],
            "incremental_predicates": [f"DBT_INTERNAL_DEST.v >= {case['cut']}"],
            "max_delete_fraction": 1,
            "durable": False,
            "connection": CONNECTION,
        }
        if case["on_key_outside"]:
            options["on_key_outside_predicates"] = case["on_key_outside"]
        if case["delete"]:
            options["delete_condition"] = "DBT_INTERNAL_SOURCE.op = 1"
        if case["condition"]:
            options["merge_update_condition"] = "DBT_INTERNAL_SOURCE.v > DBT_INTERNAL_DEST.v"
        source = pa.Table.from_pylist(case["source"], schema=SCHEMA)
        outcome = expected(case)
        before = fingerprint(root)
        hive = {"w": "VARCHAR"} if case["partitioned"] else None
        SEEN.append((case["strategy"], isinstance(outcome, MergeError), held_twice(case)))
        if isinstance(outcome, MergeError):
            try:
                run_merge(source, root, "id", **options)
            except ParquetMergeError as e:
                assert any(EXCERPTS[k] in str(e) for k in outcome.kinds), (case, str(e))
            else:
                raise AssertionError(f"not refused ({outcome.kinds}): {case}")
            assert fingerprint(root) == before, case
            return
        rows, stats = outcome
        report = run_merge(source, root, "id", **options)
        five = {
            k: report.stats[k] for k in ("inserted", "updated", "deleted", "unchanged", "total")
        }
        assert five == stats.as_dict(), (case, report.stats, stats)
        if case["condition"]:
            assert report.stats["held_back"] == stats.held_back, (case, report.stats)
        _, got = read_dataset(root, hive)
        assert len(got) == report.stats["total"], (case, "total is not the dataset's rows")
        assert canonical(got, COLUMNS) == canonical(rows, COLUMNS), (case, got, rows)


CONNECTION = duckdb.connect()


def test_rows_outside_the_predicates_are_never_touched():
    SEEN.clear()
    with _without_local_constants():  # the same cases whichever modules are loaded
        run_case()
    record_cases(len(SEEN), 0)
    # the mix the generator must give (guards it)
    assert {s for s, _, _ in SEEN} == set(STRATEGIES)
    merged = [twice for _, refused, twice in SEEN if not refused]
    assert len(merged) >= EXAMPLES // 2 and sum(merged) >= EXAMPLES // 3, SEEN
