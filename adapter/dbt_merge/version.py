"""The two halves of one release: this Python package and the dbt package (macros/, installed
through packages.yml) must be the same version where one calls the other.

They meet where the dbt package hands a model to the Python package: a `location` model's job
(macros/parquet/parquet_dataset_job.sql -> dbt_merge.parquet.dbt_job) and the job creating a
DuckDB merge_history_table (macros/history/merge_history_job.sql -> dbt_merge.duckdb.history).
The dbt package passes its own version there (its macro `package_version`); a different one is
refused before anything is done: the halves exchange arguments and a result row whose layout
is the release's own, and a mismatch would not fail loudly, it would read or pass the wrong
values. The Python front ends (merge_table, merge_dataframe, merge_parquet_dataset) render the
copy of the macros shipped inside this package, so they cannot mismatch.
"""

from __future__ import annotations

from dbt_merge import __version__


class VersionMismatchError(RuntimeError):
    """The dbt package and the Python package are of different releases."""


def mismatch(dbt_package_version: object) -> str | None:
    """The message refusing a dbt package of another version than this Python package, or
    None when they match. `dbt_package_version`: the dbt package's version (its
    dbt_project.yml), None if it did not pass one (a dbt package older than 0.1.0)."""
    dbt_version = None if dbt_package_version is None else str(dbt_package_version)
    if dbt_version == __version__:
        return None
    pin = (
        f"pin the dbt package to release {__version__} (packages.yml: revision: "
        f"v{__version__}, then dbt deps)"
    )
    if dbt_version is None:
        said, fix = "older than 0.1.0 (it names no version)", pin[:1].upper() + pin[1:]
    else:
        said = f"version {dbt_version}"
        fix = (
            f"Install the Python package of release {dbt_version} (pip install "
            f"\"dbt-merge=={dbt_version}\", or from git at tag v{dbt_version}), or {pin}"
        )
    return (
        f"the dbt package dbt_merge (packages.yml) is {said}, but the Python package dbt-merge "
        f"is version {__version__}: the two halves must be the same release. {fix}. The "
        "target was not changed."
    )


def check_dbt_package(dbt_package_version: object) -> None:
    """Raise VersionMismatchError unless the dbt package is this Python package's version."""
    message = mismatch(dbt_package_version)
    if message is not None:
        raise VersionMismatchError("dbt_merge: " + message)
