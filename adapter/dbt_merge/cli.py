"""`dbt-merge inspect` and `dbt-merge land`: the ClickHouse sources of a dbt project.
`dbt-merge report`: the merge statistics of a dbt run as a Markdown table."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from dbt_merge import __version__
from dbt_merge.clickhouse.client import (
    Catalog,
    ReadPlan,
    TableNotFoundError,
    check_loadable,
    connect,
)
from dbt_merge.clickhouse.config import ClickHouseConfig
from dbt_merge.clickhouse.engines import EngineInfo, Family
from dbt_merge.clickhouse.final_decision import FinalNotSupportedError
from dbt_merge.sources import ClickHouseSource, parse_project

INSPECT_HEADERS = (
    "source",
    "database",
    "table",
    "engine",
    "key",
    "version",
    "sign",
    "other",
    "FINAL",
    "reason",
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dbt-merge", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("inspect", "print each ClickHouse source's engine and FINAL decision"),
        ("land", "land the ClickHouse sources into Spark Iceberg tables (dbt-spark target)"),
    ):
        sub = commands.add_parser(name, help=text, description=text)
        sub.add_argument("--project-dir", default=".", help="dbt project folder")
        sub.add_argument("--profiles-dir", default=None, help="folder of profiles.yml")
        sub.add_argument("--target", default=None, help="dbt target (land: a spark target)")
        sub.add_argument(
            "--plugin",
            default="clickhouse",
            help="value of `plugin` in a source's meta/config that marks it",
        )
        sub.add_argument(
            "--dsn",
            default=None,
            help="ClickHouse DSN (default: $CLICKHOUSE_DSN or CLICKHOUSE_* vars)",
        )
        if name == "land":
            sub.add_argument(
                "--staging-dir",
                default=None,
                help="folder for staged Parquet files, readable by Spark",
            )
    text = "print the merge statistics of a dbt run (run_results.json) as a Markdown table"
    report = commands.add_parser("report", help=text, description=text)
    report.add_argument("run_results", help="a dbt run's target/run_results.json")
    report.add_argument(
        "--manifest",
        default=None,
        help="manifest.json naming the strategy of merge models that failed (default: the one "
        "beside run_results.json, if any)",
    )
    report.add_argument(
        "--output",
        default=None,
        help="append the report to this file instead of printing it (e.g. $GITHUB_STEP_SUMMARY)",
    )
    return parser


def _profiles_dir(args: argparse.Namespace) -> str:
    return args.profiles_dir or os.environ.get("DBT_PROFILES_DIR") or str(Path.home() / ".dbt")


def _plans(args: argparse.Namespace) -> tuple[Catalog, list[tuple[ClickHouseSource, ReadPlan]]]:
    sources = parse_project(args.project_dir, _profiles_dir(args), args.target, args.plugin)
    config = ClickHouseConfig.from_mapping({"dsn": args.dsn})
    catalog = Catalog(connect(config))
    plans = [(s, catalog.plan(s.database, s.table, s.use_final, s.label)) for s in sources]
    return catalog, plans


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Rows as a plain fixed-width text table."""
    cells = [[str(c) for c in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _other_columns(engine: EngineInfo) -> str:
    parts = []
    if engine.is_deleted_column:
        parts.append(f"is_deleted={engine.is_deleted_column}")
    if engine.columns:
        kind = "sum" if engine.family is Family.SUMMING else "columns"
        parts.append(f"{kind}={','.join(engine.columns)}")
    return " ".join(parts)


def inspect_rows(plans: Sequence[tuple[ClickHouseSource, ReadPlan]]) -> list[list[object]]:
    """One row per source: where it is, its engine and key columns, and the FINAL decision."""
    rows = []
    for source, plan in plans:
        engine = plan.table.engine
        effective = engine.effective
        rows.append(
            [
                source.label,
                plan.table.database,
                plan.table.table,
                engine.engine if effective is engine else f"{engine.engine} -> {effective.engine}",
                plan.table.sorting_key.replace(", ", ","),
                effective.version_column,
                effective.sign_column,
                _other_columns(effective),
                "yes" if plan.decision.use_final else "no",
                plan.decision.reason,
            ]
        )
    return rows


def _inspect(args: argparse.Namespace) -> int:
    _, plans = _plans(args)
    print(format_table(INSPECT_HEADERS, inspect_rows(plans)))
    return 0


def _land(args: argparse.Namespace) -> int:
    from dbt_merge.spark.loader import land
    from dbt_merge.spark.profile import get_spark_session, load_target, spark_conf

    catalog, plans = _plans(args)
    for _, plan in plans:
        check_loadable(plan)
    project = yaml.safe_load((Path(args.project_dir) / "dbt_project.yml").read_text())
    target = load_target(_profiles_dir(args), project["profile"], args.target)
    spark = get_spark_session(spark_conf(target))
    rows = []
    for source, plan in plans:
        landed = land(spark, catalog, source, plan, args.staging_dir)
        rows.append(
            [
                source.label,
                landed.spark_table,
                landed.rows,
                "yes" if plan.decision.use_final else "no",
            ]
        )
    print(format_table(("source", "spark table", "rows", "FINAL"), rows))
    return 0


def _report(args: argparse.Namespace) -> int:
    from dbt_merge.report import format_markdown, load_report

    try:
        text = format_markdown(load_report(args.run_results, args.manifest))
        if args.output:
            with open(args.output, "a", encoding="utf-8") as out:
                out.write(text)
        else:
            print(text, end="")
    except OSError as error:  # a missing run_results.json: a message, not a traceback
        raise RuntimeError(str(error)) from error
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `dbt-merge` console script."""
    args = _parser().parse_args(argv)
    command = {"inspect": _inspect, "land": _land, "report": _report}[args.command]
    try:
        return command(args)
    except (FinalNotSupportedError, TableNotFoundError, ValueError, RuntimeError) as error:
        print(f"dbt-merge: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
