"""`dbt-merge inspect` and `dbt-merge land`: the ClickHouse sources of a dbt project.
`dbt-merge report`: the merge statistics of a dbt run as a Markdown table.
`dbt-merge dbt-package`: the dbt package of this release, which this Python package carries."""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import re
import shutil
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
from dbt_merge.clickhouse.config import ENV_VARS, ClickHouseConfig, redact_dsn
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


class _Parser(argparse.ArgumentParser):
    """argparse, except that a misspelt option before the command (`--versoin`) is named with
    the option it resembles, not reported as a missing command."""

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        given = getattr(self, "_given", [])
        if "required: command" in message and not any(not a.startswith("-") for a in given):
            known = [o for action in self._actions for o in action.option_strings]
            unknown = [a for a in given if a.split("=")[0] not in known]
            if unknown:
                close = difflib.get_close_matches(unknown[0].split("=")[0], known, n=1)
                message = f"unrecognized arguments: {' '.join(unknown)}" + (
                    f" (did you mean {close[0]}?)" if close else "")
        super().error(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dbt-merge", description=__doc__)
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
    text = "print the folder of the dbt package this Python package carries (the same release)"
    package = commands.add_parser(
        "dbt-package", help=text, description=text + ": name it in packages.yml as `- local: "
        "<folder>`, then run dbt deps. With --copy, copy it to a folder of yours first.")
    package.add_argument(
        "--copy",
        metavar="FOLDER",
        default=None,
        help="copy the dbt package (dbt_project.yml, macros/) into FOLDER, which must not exist "
        "yet, and print FOLDER",
    )
    return parser


def _profiles_dir(args: argparse.Namespace) -> str:
    """Where profiles.yml is, found as dbt finds it: --profiles-dir, $DBT_PROFILES_DIR, the
    folder the command runs in if it holds one, else ~/.dbt."""
    if args.profiles_dir or os.environ.get("DBT_PROFILES_DIR"):
        return args.profiles_dir or os.environ["DBT_PROFILES_DIR"]
    if (Path.cwd() / "profiles.yml").is_file():
        return str(Path.cwd())
    return str(Path.home() / ".dbt")


def _dbt_package(args: argparse.Namespace) -> int:
    from dbt_merge.version import dbt_package_dir

    source = dbt_package_dir()
    if not (source / "dbt_project.yml").is_file():
        raise RuntimeError(f"this installation of dbt-merge has no dbt package in {source}")
    if args.copy is None:
        print(source)
        return 0
    target = _copy_destination(args.copy, source)
    target.mkdir(parents=True)
    shutil.copy2(source / "dbt_project.yml", target / "dbt_project.yml")
    shutil.copytree(source / "macros", target / "macros",
                    ignore=shutil.ignore_patterns("__pycache__"))
    print(target)
    return 0


def _copy_destination(given: str, source: Path) -> Path:
    """The new folder `--copy given` names, absolute (a leading ~ is the home folder, also when
    the shell left it as written: `--copy=~/x`, a quoted '~/x'), with every link among its
    existing parents resolved. Refused: anything already there, a dangling link included (it
    would be followed to wherever it points); a folder inside the dbt package itself (the copy
    would copy itself); a folder inside a dbt_packages/ folder (dbt deps empties it)."""
    path = Path(os.path.abspath(os.path.expanduser(given)))
    head = f"--copy {given}: "
    if os.path.lexists(path):
        raise RuntimeError(f"{head}{path} exists already; name a new folder (an older copy: "
                           "remove it first)")
    existing, rest = path, []
    while not os.path.lexists(existing):
        existing, rest = existing.parent, [existing.name, *rest]
    if not existing.exists():
        raise RuntimeError(f"{head}{existing} is a link to {os.readlink(existing)}, which does "
                           "not exist; name a folder whose parents exist or can be made")
    target = existing.resolve().joinpath(*rest)
    for inside in (source, source / "macros"):
        if target.is_relative_to(inside.resolve()):
            raise RuntimeError(f"{head}{target} is inside the dbt package being copied "
                               f"({inside.resolve()}); name a folder of your project")
    if "dbt_packages" in target.parts:
        raise RuntimeError(f"{head}{target} is inside a dbt_packages folder, which dbt deps "
                           "empties; copy it to a folder of your project outside dbt_packages "
                           "(e.g. dbt_merge_package) and name that in packages.yml as `local:`")
    return target


def _plans(
    args: argparse.Namespace, doing: str
) -> tuple[Catalog, list[tuple[ClickHouseSource, ReadPlan]]] | None:
    """The read plan of each ClickHouse source of the project, or None (and a line saying so)
    when the project marks none: then nothing is connected to."""
    sources = parse_project(args.project_dir, _profiles_dir(args), args.target, args.plugin)
    if not sources:
        print(
            f"No source of the dbt project in {args.project_dir} is marked as a ClickHouse source "
            f"(`plugin: {args.plugin}` in its meta or config), so there is nothing to {doing}; "
            "nothing was connected to. Pass --plugin NAME if the sources name the plugin "
            "otherwise."
        )
        return None
    catalog = Catalog(_connect(ClickHouseConfig.from_mapping({"dsn": args.dsn}), args.dsn))
    plans = [(s, catalog.plan(s.database, s.table, s.use_final, s.label)) for s in sources]
    return catalog, plans


def _address(config: ClickHouseConfig, dsn_given: str | None) -> tuple[str, str]:
    """Where `config` points (its password hidden), and where that came from."""
    if config.dsn:
        return redact_dsn(config.dsn), "--dsn" if dsn_given else ENV_VARS["dsn"]
    port = config.port or (8443 if config.secure else 8123)
    named = [ENV_VARS[k] for k in ("host", "port") if os.environ.get(ENV_VARS[k])]
    origin = " and ".join(named) or "the default: no --dsn, CLICKHOUSE_DSN or CLICKHOUSE_HOST set"
    return f"{config.host or 'localhost'}:{port}", origin


def _connect(config: ClickHouseConfig, dsn_given: str | None):
    """A client for `config`; a server that cannot be reached is one error naming where the
    address came from and how to give another (the drivers' own retry warnings kept quiet)."""
    from clickhouse_connect.driver.exceptions import ClickHouseError

    quiet = [logging.getLogger(name) for name in ("clickhouse_connect", "urllib3")]
    levels = [logger.level for logger in quiet]
    for logger in quiet:
        logger.setLevel(logging.CRITICAL)
    try:
        return connect(config)
    except ClickHouseError as error:
        where, origin = _address(config, dsn_given)
        reason = re.search(r"\[Errno -?\d+\] ([^'\")]+)", str(error))
        reason = reason.group(1).strip() if reason else " ".join(str(error).split())[:300]
        raise RuntimeError(
            f"cannot connect to ClickHouse at {where} (from {origin}): {reason}. Start it, or "
            "point --dsn (or CLICKHOUSE_DSN, or CLICKHOUSE_HOST and CLICKHOUSE_PORT) at a "
            "ClickHouse server that is running."
        ) from None
    finally:
        for logger, level in zip(quiet, levels, strict=True):
            logger.setLevel(level)


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
    found = _plans(args, "inspect")
    if found is None:
        return 0
    _, plans = found
    print(format_table(INSPECT_HEADERS, inspect_rows(plans)))
    return 0


def _land(args: argparse.Namespace) -> int:
    from dbt_merge.spark.loader import land
    from dbt_merge.spark.profile import get_spark_session, load_target, spark_conf

    found = _plans(args, "land")
    if found is None:
        return 0
    catalog, plans = found
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

    text = format_markdown(load_report(args.run_results, args.manifest))
    if not args.output:
        print(text, end="")
        return 0
    try:
        with open(args.output, "a", encoding="utf-8") as out:
            out.write(text)
    except OSError as error:
        raise RuntimeError(f"cannot write {args.output}: {error.strerror or error}") from None
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `dbt-merge` console script."""
    args = _parser().parse_args(argv)
    command = {"inspect": _inspect, "land": _land, "report": _report,
               "dbt-package": _dbt_package}[args.command]
    try:
        return command(args)
    except ModuleNotFoundError as error:
        # `inspect` and `land` read the dbt project (dbt), `land` writes with PySpark through
        # the Spark door (which renders macros with Jinja2): the chdb extra alone has none
        needed = {"dbt": "dbt", "pyspark": "PySpark", "jinja2": "Jinja2"}.get(
            (error.name or "").split(".")[0])
        if needed is None:
            raise
        extra = "spark" if needed != "dbt" or args.command == "land" else "duckdb"
        print(f"dbt-merge: error: dbt-merge {args.command} needs {needed}, which is not installed "
              f"here. Install the extra that brings it beside the one you have: pip install "
              f"'dbt-merge[{extra}]' (with [chdb] for an embedded ClickHouse).", file=sys.stderr)
        return 1
    except (FinalNotSupportedError, TableNotFoundError, ValueError, RuntimeError) as error:
        # one line, whatever the error's text (dbt's parse errors span several)
        print(f"dbt-merge: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
