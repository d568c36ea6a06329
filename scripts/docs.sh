#!/usr/bin/env bash
# Build the documentation site (mkdocs.yml) in strict mode: a broken link or anchor, or a page
# missing from the navigation, fails. Offline: no fonts, no plugin that downloads. Usage:
#   bash scripts/docs.sh [SITE_DIR]      (default: site/)
# mkdocs comes from .venv when `make test` set it up, else from a small virtualenv of its own
# (scripts/tools.sh): the site needs Python and pip, not the test environment.
set -euo pipefail
export NO_MKDOCS_2_WARNING=1   # Material prints a notice about its successor otherwise
cd "$(dirname "$0")/.."
# shellcheck source=scripts/tools.sh
. scripts/tools.sh
python=$(tools_python)
site_dir=${1:-site}
"$python" -m mkdocs build --strict --site-dir "$site_dir"   # not --quiet: it hides the warnings strict counts
echo "docs: built $(find "$site_dir" -name "*.html" ! -name 404.html | wc -l) pages into $site_dir"
