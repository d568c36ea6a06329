#!/usr/bin/env bash
# The sdist and the wheel of this version into dist/ (RELEASING.md), built with `build` from a
# small virtualenv of its own (scripts/tools.sh), not the test environment.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/tools.sh
. scripts/tools.sh
python=$(tools_python)
rm -rf dist
"$python" -m build --outdir dist .
