# Sourced by docs.sh and dist.sh: `tools_python` prints the Python that has the building tools
# (build, mkdocs, mkdocs-material, at the versions pyproject.toml's `test` extra asks for).
# That is .venv's when `make test` has set it up (a superset); else a small virtualenv of its
# own, .state/tools-venv, made once (again only when pyproject.toml changes): building the
# wheel or the site needs Python and pip, not the test and benchmark environment.
tools_python() {
  if [ -f .venv/.dbt_merge_installed ]; then
    echo .venv/bin/python
    return
  fi
  local venv=.state/tools-venv
  if [ ! -x "$venv/bin/python" ]; then
    mkdir -p .state
    "${PYTHON:-python3}" -m venv "$venv" >&2
  fi
  local stamp=$venv/.tools_installed
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "installing build, mkdocs and mkdocs-material into $venv" >&2
    "$venv/bin/python" - <<'PY' > "$venv/requirements.txt"
import re
import tomllib

with open("pyproject.toml", "rb") as f:
    test = tomllib.load(f)["project"]["optional-dependencies"]["test"]
wanted = {"build", "mkdocs", "mkdocs-material"}
print("\n".join(r for r in test if re.match(r"[\w.-]+", r).group(0).lower() in wanted))
PY
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$venv/requirements.txt" >&2
    touch "$stamp"
  fi
  echo "$venv/bin/python"
}
