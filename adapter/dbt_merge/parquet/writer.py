"""The Parquet writer behind the shared flow (macros/flow/run_merge.sql).

The door (api.py) registers the source, presents the dataset as the target relation (a DuckDB
view over its files) and renders run_merge with this writer in the render context as
`dbt_merge_writer` (macros/write/target_writer.sql). The flow plans, checks, classifies and
counts; it asks the writer for:

- scope(plan, spec): the rows the SELECT may match, a view over the candidate files (their
  row-group statistics and hive values against the checked keys) with each row's file as the
  `origin` column, which the changes then carry;
- apply(plan, counts, spec): rewrite the files holding a changed row, write the new rows to new
  files, and leave the publish (commit.py) to the door (self.deferred);
- build(plan, rows_sql): a first build or full refresh: every file replaced.

See docs/design/parquet-writer.md. Nothing is written to the dataset before the door publishes.
"""

from __future__ import annotations

import os
from typing import Any

from dbt_merge.parquet import api
from dbt_merge.parquet import sql as q
from dbt_merge.parquet.api import MergeReport, _dest_values, _find, _planned_columns
from dbt_merge.parquet.sql import DST, SRC, Column


class ParquetWriter(api._Merge):
    """One merge's writer. prepare() is the door's half (source and target relations); the
    flow calls scope, apply and build."""

    # ------------------------------------------------------------------ the door's half

    def prepare(self, source: Any) -> tuple[str, bool]:
        """The source as the files will store it (a view: the flow stages it), the dataset's
        files, partitions and columns, and the target view. Returns (source select, build)."""
        stage = self._stored_view(self._source_relation(source))
        source_columns = self.s.describe(stage)
        self.listed = api.commit.listing(self.root)
        files = sorted(self.listed)
        self.files = files
        self.new_state = [(str(self.root / f), f) for f in files]
        self.deferred = lambda: None
        partitions = self._partition_columns(files, [c.name for c in source_columns])
        hive_types = self._hive_types(partitions, source_columns)
        build = self.full_refresh or not files
        hive = None
        if hive_types is not None and files:
            values = {str(self.root / f): api.layout.partition_values(f, partitions) for f in files}
            hive = q.Hive(hive_types, values)
        self.partitions, self.hive, self.hive_types = partitions, hive, hive_types or {}
        self.target_columns = None if build else self._target_columns(files, hive)
        self.view = q.quote(self._free_name(str(self.root)))
        if files:
            self.s.con.execute(
                f"create temporary view {self.view} as select * from "
                + q.read_files(self._paths(files), hive)
            )
            self.s.created.append(("view", self.view))
        self.report = MergeReport(
            stats={},
            root=str(self.root),
            columns=[c.name for c in self.target_columns or source_columns],
            partition_columns=partitions,
            hive_types=self.hive_types,
            dataset_files=len(files),
        )
        return f"select * from {stage}", build

    def _stored_view(self, raw: str) -> str:
        """types.stored as a view over the source (its lossy values refused first, read from
        the source itself): the flow stages it once."""
        conversions = {}
        for col in self.s.describe(raw):
            how = api.types.stored(col.name, col.dtype)
            if isinstance(how, str):
                self.fail(how + " The target was not changed.")
            if how is not None:
                conversions[col.name] = how
        for name, how in conversions.items():
            if how.check is None:
                continue
            c = q.quote(name)
            bad = self.s.query(
                f"select cast({c} as varchar) from {raw} where {how.check.format(c=c)} limit 1"
            )[1]
            if bad:
                self.fail(
                    f"column '{name}' {how.problem} (e.g. {bad[0][0]}). {how.fix} The target "
                    "was not changed."
                )
        replaced = ", ".join(
            f"{how.expression.format(c=q.quote(name))} as {q.quote(name)}"
            for name, how in conversions.items()
            if how.expression != "{c}"
        )
        if not replaced:
            return raw
        return self.s.temp("stored", f"select * replace ({replaced}) from {raw}", "view")

    # ------------------------------------------------------------------ the flow's calls

    def scope(self, plan, spec) -> dict[str, Any]:
        """The candidate files as the relation the classify joins, with each row's file."""
        schema_plan = plan["schema"]
        lowered = {p.lower() for p in self.partitions}
        for col in [*schema_plan["removed"], *(r["column"] for r in schema_plan["retyped"])]:
            if col.name.lower() in lowered:
                self.fail(
                    f"on_schema_change='{self.cfg['on_schema_change']}' would remove or "
                    f"retype column '{col.name}', which is a partition column of the dataset "
                    "(its values are folder names). Keep the column as it is in the SELECT, "
                    "or rebuild the dataset with --full-refresh (full_refresh=True). The "
                    "target was not changed."
                )
        target_names = [c.name for c in self.target_columns]
        self.origin = q.fresh_name("dbt_merge_file", [*target_names, *plan["source_names"],
                                                      plan["names"]["action"]])
        paths = self._paths(self.files)
        file_list = "[" + ", ".join(q.literal(p) for p in paths) + "]"
        rewrite_all = bool(schema_plan["removed"] or schema_plan["retyped"])
        if plan["actions"]["target_only"] == "delete" or rewrite_all:
            candidates = paths
        else:
            candidates = self._candidate_files(
                plan, plan["deduped"] or plan["stage"], paths, file_list, self.target_columns,
                self.partitions, self.hive, self.origin,
            )
        self.report.files_scanned = len(candidates)
        self.read_columns = self.target_columns + [
            Column(c.name, c.dtype) for c in schema_plan["added"]
        ]
        read = (
            q.read_files(candidates, self.hive, self.origin, self.read_columns)
            if candidates
            else q.empty_relation(self.read_columns, self.origin)
        )
        scope = self.s.temp("scope", f"select * from {read}", "view")
        return {"scope": scope, "origin": self.origin}

    def apply(self, plan, counts, spec) -> None:
        """Rewrite the files holding an updated or deleted row, write the new rows."""
        actions = plan["actions"]
        deletes = actions["target_only"] == "delete"
        schema_plan = plan["schema"]
        rewrite_all = bool(schema_plan["removed"] or schema_plan["retyped"])
        target_columns = self.target_columns
        target_names = [c.name for c in target_columns]
        out_columns = _planned_columns(target_columns, schema_plan)
        read_columns = self.read_columns
        keys = [_find(k, target_names) or k for k in plan["key_columns"]]
        source = plan["deduped"] or plan["stage"]
        file_col, action_col = self.origin, plan["names"]["action"]
        f, a = q.quote(file_col), q.quote(action_col)
        considered, live = spec["considered"], spec["live"]
        delete_flag = spec["delete_flag"]
        kept_source = f"not {delete_flag}" if delete_flag else None
        inserts = actions["source_only"] == "insert"
        compare = plan["compare"]
        key_match = self.m.key_match(plan["key_columns"], SRC, DST, compare)
        paths = self._paths(self.files)
        # the target rows the changes hold (with the file of each), and when the strategy
        # deletes, the considered (live) rows no source row matched: the old `matched` table
        key_list = ", ".join(q.quote(k) for k in plan["key_columns"])
        matched_sql = (
            f"select {f}, {key_list}, {a} from {plan['changes']}"
            f" where {f} is not null and {a} in ({', '.join(q.literal(x) for x in q.MATCHED)})"
        )
        if deletes and counts.get("unmatched"):
            dst_keys = ", ".join(f"{DST}.{q.quote(k)}" for k in plan["key_columns"])
            missing = "not " + self.m.exists_match(
                source, plan["key_columns"], DST, None, "=", compare
            )
            where = " and ".join(filter(None, [considered, live, missing]))
            matched_sql += (
                f" union all select {DST}.{f}, {dst_keys}, 'D' from {plan['scope']} as {DST}"
                f" where {where}"
            )
        matched = self.s.temp("matched", matched_sql)
        inserted = counts["inserted"]
        affected = paths if rewrite_all else []
        if not rewrite_all and (counts["updated"] or counts["deleted"]):
            affected = [
                r[0]
                for r in self.s.query(
                    f"select distinct {f} from {matched} where {a} in {q.REWRITES} order by 1"
                )[1]
            ]
        if not affected and not inserted and not schema_plan["added"]:
            return
        source_map = {}
        for col in out_columns:
            found = _find(col.name, plan["source_names"])
            if found is not None:
                source_map[col.name.lower()] = found
        soft = plan["soft_delete"]
        images = q.Images(
            out_columns,
            source_map,
            plan["update_columns"],
            keys,
            self.partitions,
            action_col,
            deletes,
            read_columns=read_columns,
            dest_values=_dest_values(schema_plan),
            considered=considered,
            live=live,
            soft_delete=(_find(soft["column"], [c.name for c in out_columns]) if soft else None),
            soft_delete_timestamp=(
                _find(soft["timestamp_column"], [c.name for c in out_columns])
                if soft and soft["timestamp_column"]
                else None
            ),
            now=self._now() if soft and soft["timestamp_column"] else None,
            compared=self._compared(plan),
        )
        m_alias = "dbt_merge_matched"
        matched_match = self.m.key_match(plan["key_columns"], m_alias, SRC, compare)
        matched_source = None
        if affected:
            matched_source = self.s.temp(
                "matched_source",
                q.matched_source_sql(
                    matched, source, file_col, action_col, matched_match, every_file=rewrite_all
                ),
            )
        outputs = self._rewrite_files(affected, images, matched_source, self.hive, file_col,
                                      key_match)
        affected_view = None
        if affected and images.moved():
            affected_view = self.s.temp(
                "affected",
                "select * from " + q.read_files(affected, self.hive, columns=read_columns),
                "view",
            )
        new_rows = q.new_rows_sql(
            images, source, matched, matched_match, inserts and inserted > 0, affected_view,
            matched_source, key_match, kept_source,
        )
        if new_rows is not None:
            bound = inserted + (counts["updated"] + counts["deleted"] if images.moved() else 0)
            outputs += self._write_new_rows(
                new_rows, bound, keys, [c.name for c in out_columns], self.partitions
            )
        report = self.report
        root = str(self.root) + os.sep
        report.files_removed = [p[len(root):].replace(os.sep, "/") for p in affected]
        carries = any(rows for _, rows in outputs) or not schema_plan["added"]
        report.files_added = self._keep_a_file(
            outputs, len(self.files) - len(affected) if carries else 0, out_columns,
            self.partitions,
        )
        report.rows_written = sum(n for _, n in outputs)
        report.columns = [c.name for c in out_columns]
        self._publish(report)
        report.dataset_files = len(self.files) - len(report.files_removed) + len(
            report.files_added
        )

    def build(self, plan, rows_sql: str) -> None:
        """A first build or full refresh: the checked rows into new files, every file replaced."""
        partitions = self.partitions
        lowered = [p.lower() for p in partitions]
        columns = plan["target_names"]
        # as a reader of the files sees them: the files' columns, then the partition columns
        self.report.columns = [c for c in columns if c.lower() not in lowered] + sorted(
            (c for c in columns if c.lower() in lowered), key=lambda c: lowered.index(c.lower())
        )
        source = f"({rows_sql}) as dbt_merge_rebuild"
        self._build(plan, source, self.files, partitions, self.report)
