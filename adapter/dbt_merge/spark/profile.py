"""Build a SparkSession from the same profile a dbt-spark `method: session` target uses."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jinja2
import yaml


def _env_var(name: str, default: str | None = None) -> str:
    if name in os.environ:
        return os.environ[name]
    if default is not None:
        return default
    raise KeyError(f"Env var required but not provided: '{name}'")


def _render(value: Any) -> Any:
    if isinstance(value, str) and "{{" in value:
        return jinja2.Template(value).render(env_var=_env_var)
    if isinstance(value, dict):
        return {k: _render(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v) for v in value]
    return value


def load_target(profiles_dir: str | Path, profile: str, target: str | None = None) -> dict:
    """Return one rendered output of `profiles.yml` (env_var() resolved, like dbt does)."""
    path = Path(profiles_dir) / "profiles.yml"
    profiles = yaml.safe_load(path.read_text())
    if profile not in profiles:
        raise KeyError(f"profile '{profile}' not found in {path}")
    entry = profiles[profile]
    name = target or _render(entry.get("target"))
    outputs = entry.get("outputs", {})
    if name not in outputs:
        raise KeyError(f"target '{name}' not found in profile '{profile}' ({path})")
    return _render(outputs[name])


def spark_conf(target: dict) -> dict[str, str]:
    """The Spark configuration of a dbt-spark target (its `server_side_parameters`)."""
    if target.get("type") != "spark":
        raise ValueError(f"target type is '{target.get('type')}', not 'spark'")
    return {str(k): str(v) for k, v in (target.get("server_side_parameters") or {}).items()}


def get_spark_session(conf: dict[str, str]):
    """Get (or create) the process's SparkSession with `conf`, like dbt-spark's session method."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
