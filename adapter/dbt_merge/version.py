"""The two halves of one release: this Python package and the dbt package (macros/, installed
through packages.yml) must be the same version.

Checked twice:
- once per dbt invocation, for every model, by the dbt plugin of dbt_merge.dbt_plugin (dbt loads
  it on every command that reads the project): a project whose installed dbt package dbt_merge
  is another version than this Python package runs nothing;
- where the dbt package hands a model to the Python package: a `location` model's job
  (macros/parquet/parquet_dataset_job.sql -> dbt_merge.parquet.dbt_job) and the job creating a
  DuckDB merge_history_table (macros/history/merge_history_job.sql -> dbt_merge.duckdb.history).
  The dbt package passes its own version there (its macro `package_version`); the halves
  exchange arguments and a result row whose layout is the release's own, and a mismatch would
  not fail loudly, it would read or pass the wrong values.
The Python front ends (merge_table, merge_dataframe, merge_parquet_dataset) render the dbt
package shipped inside this package (dbt_merge/dbt_package), so they cannot mismatch.

RELEASES names the commit of each release of the repository, which is what a team pins: a
release's own commit cannot name itself, so the next commit records it (RELEASING.md).
"""

from __future__ import annotations

from pathlib import Path

from dbt_merge import __version__

#: version -> the repository's commit of that release (the commit whose CHANGELOG.md dates it)
RELEASES = {
    "0.1.0": "c72af1bafcd38dbcbf2e7f5a214e3e8247af96ed",
}


class VersionMismatchError(RuntimeError):
    """The dbt package and the Python package are of different releases."""


def dbt_package_dir() -> Path:
    """The dbt package this Python package carries (dbt_project.yml, macros/): in an installed
    wheel a copy of the release's, in a checkout links to the repository's own."""
    return Path(__file__).resolve().parent / "dbt_package"


def mismatch(dbt_package_version: object, where: str | None = None, extra: str = "duckdb",
             outcome: str = "The target was not changed.") -> str | None:
    """The message refusing a dbt package of another version than this Python package, or
    None when they match. `dbt_package_version`: the dbt package's version (its
    dbt_project.yml), None if it names none; `where`: its folder, when known; `extra`: the
    pip extra of the engine, for the fix; `outcome`: what the refusal left."""
    dbt_version = None if dbt_package_version is None else str(dbt_package_version)
    if dbt_version == __version__:
        return None
    said = (f"version {dbt_version}" if dbt_version is not None
            else "of no version (its dbt_project.yml has no `version:`: an older copy, or one "
                 "that lost the line)")
    folder = f", installed in {where}" if where else ""
    other = (f"release {dbt_version}" if dbt_version is not None else "the dbt package")
    return (
        f"the dbt package dbt_merge (packages.yml{folder}) is {said}, but the Python package "
        f"dbt-merge is version {__version__}: the two halves must be the same release. Either "
        f"use the dbt package of release {__version__}, which the Python package carries: in "
        f"packages.yml, `- local: {dbt_package_dir()}` (what `dbt-merge dbt-package` prints), "
        f"then dbt deps; or install the Python package of {other} from where packages.yml "
        f"takes it: `pip install \"dbt-merge[{extra}] @ git+<its git URL>@<its revision>\"`, "
        f"or `pip install \"<its local folder>[{extra}]\"` for a checkout. `dbt-merge "
        f"--version` names the Python package's release. {outcome}"
    )


def check_dbt_package(dbt_package_version: object) -> None:
    """Raise VersionMismatchError unless the dbt package is this Python package's version."""
    message = mismatch(dbt_package_version)
    if message is not None:
        raise VersionMismatchError("dbt_merge: " + message)
