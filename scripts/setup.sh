#!/usr/bin/env bash
# Idempotent set-up for a fresh machine: Java (for Spark), a virtualenv, the package and its
# test/bench dependencies. Re-running it is cheap: pip runs only when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v java >/dev/null 2>&1; then
  echo "setup: installing a Java runtime for Spark" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.dbt_merge_installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test,bench]"
  touch "$stamp"
fi
