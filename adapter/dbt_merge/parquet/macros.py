"""Call the dbt package's own macros from Python, outside dbt.

The Parquet merge plans and checks a merge exactly as the `merge` materialization does, by
rendering the same Jinja macros (`macros/plan`, `macros/validation`, `macros/strategies`,
`macros/utils`) in a small stand-in for dbt's macro context:

- `dbt_merge.<name>(...)` and `adapter.dispatch(name, 'dbt_merge')` resolve to the package's
  macros, `duckdb__` first, as dbt-duckdb resolves them;
- `return(value)` hands a Python value back, as in dbt;
- `config.get` reads the options given to the Python API;
- `{% call statement(...) %}` and `load_result` run SQL on the merge's DuckDB connection;
- `raise_merge_error` raises `ParquetMergeError`; `exceptions.warn` warns (Python warnings);
- `config.model.config` (read by check_config_keys) holds the options given, `var()` gives its
  default, `modules` has `re` and `datetime`.

Only what those macros use is provided; any other name fails loudly (StrictUndefined), so a
macro that starts to need more of dbt's context shows up in the tests, not as a wrong result.
"""

from __future__ import annotations

import datetime
import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from dbt_merge.parquet.errors import ParquetMergeError

# Folders of macros/ whose files are plain Jinja macros (materializations and generic tests use
# dbt's own block tags and are not needed here).
MACRO_FOLDERS = ("plan", "validation", "strategies", "stats", "utils")


def macros_dir() -> Path:
    """The package's macros/ folder: $DBT_MERGE_MACROS, the copy shipped inside the Python
    package (`dbt_merge/_macros`, in built wheels), or the repository checkout."""
    override = os.environ.get("DBT_MERGE_MACROS")
    if override:
        return Path(override)
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_macros", here.parent.parent / "macros"):
        if (candidate / "plan" / "merge_strategies.sql").is_file():
            return candidate
    raise ParquetMergeError(
        "cannot find the dbt_merge macros (looked in dbt_merge/_macros and the checkout's "
        "macros/). Set DBT_MERGE_MACROS to the package's macros folder."
    )


class _MacroReturn(Exception):
    def __init__(self, value: Any):
        super().__init__()
        self.value = value


def _return(value: Any) -> None:
    raise _MacroReturn(value)


_MACRO_DEF = re.compile(r"{%-?\s*macro\s+(\w+)\s*\(")


@cache
def _environment(folder: str) -> jinja2.Environment:
    """A Jinja environment over the macros folder. Compiling the macros costs about as much as
    a small merge, so compiled files are cached on disk (jinja's bytecode cache, keyed by each
    file's content) when a cache folder is writable."""
    cache_dir = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    bytecode_cache = None
    try:
        target = cache_dir / "dbt_merge" / "jinja"
        target.mkdir(parents=True, exist_ok=True)
        bytecode_cache = jinja2.FileSystemBytecodeCache(str(target))
    except OSError:
        pass
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        bytecode_cache=bytecode_cache,
        extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"],
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )


@cache
def _macro_files(folder: str) -> dict[str, str]:
    """Macro name -> the file (relative to the folder) that defines it, found without
    compiling anything: a merge compiles only the files whose macros it calls."""
    root = Path(folder)
    found: dict[str, str] = {}
    for sub in MACRO_FOLDERS:
        for path in sorted((root / sub).glob("*.sql")):
            for name in _MACRO_DEF.findall(path.read_text()):
                found[name] = f"{sub}/{path.name}"
    return found


@dataclass
class Table:
    """What dbt's load_result(...).table offers the macros: rows, indexable."""

    column_names: list[str]
    rows: list[tuple]


class _Config:
    def __init__(self, values: dict[str, Any]):
        self._values = values
        self.model = _Model({k: v for k, v in values.items() if v is not None})

    def get(self, name: str, default: Any = None) -> Any:
        value = self._values.get(name)
        return default if value is None else value


class _Exceptions:
    @staticmethod
    def raise_compiler_error(message: str) -> None:
        raise ParquetMergeError(message)

    @staticmethod
    def warn(message: str) -> str:
        warnings.warn(message, stacklevel=2)
        return ""


@dataclass
class _Model:
    """config.model: the node whose config check_config_keys reads (the API's options)."""

    config: dict[str, Any]


class _Adapter:
    def __init__(self, macros: MacroContext):
        self._macros = macros

    def dispatch(self, name: str, package: str | None = None) -> Callable:
        for prefix in ("duckdb__", "default__"):
            if prefix + name in self._macros.names:
                return self._macros.get(prefix + name)
        raise ParquetMergeError(f"no macro {name!r} for duckdb in the dbt_merge package")

    def type(self) -> str:
        return "duckdb"


class _Namespace:
    def __init__(self, macros: MacroContext):
        self._macros = macros

    def __getattr__(self, name: str) -> Callable:
        return self._macros.get(name)


class MacroContext:
    """The package's macros bound to one merge: its config and its DuckDB connection.

    run_query(sql) -> (column names, rows) runs SQL for `statement` calls; on_error(message)
    raises the error the caller wants for `raise_merge_error` (it must not return).
    """

    def __init__(
        self,
        config: dict[str, Any],
        run_query: Callable[[str], tuple[list[str], list[tuple]]],
        on_error: Callable[[str], None],
        model_name: str = "merge_parquet_dataset",
    ):
        self._run_query = run_query
        self._results: dict[str, Table] = {}
        overrides: dict[str, Callable] = {"raise_merge_error": on_error}
        context = {
            "return": _return,
            "config": _Config(config),
            "exceptions": _Exceptions(),
            "adapter": _Adapter(self),
            "dbt_merge": _Namespace(self),
            "statement": self._statement,
            "load_result": self._load_result,
            "log": lambda *args, **kwargs: "",
            "model": {"name": model_name},
            "execute": True,
            "var": lambda name, default=None: default,  # the Python API has no dbt vars
            "modules": {"re": re, "datetime": datetime},
        }
        self._folder = str(macros_dir())
        self._context = context
        self._files = _macro_files(self._folder)
        self._macros: dict[str, Callable] = dict(overrides)
        self.names = frozenset(self._files) | frozenset(overrides)

    def get(self, name: str) -> Callable:
        if name not in self._macros:
            if name not in self._files:
                raise ParquetMergeError(f"no macro {name!r} in the dbt_merge package")
            self._load(self._files[name])
        return self._macros[name]

    def _load(self, file: str) -> None:
        """Render one macro file's top level in this merge's context and keep every macro it
        defines (a template module would export only the names without a leading underscore)."""
        template = _environment(self._folder).get_template(file)
        file_context = template.new_context(dict(self._context))
        for _ in template.root_render_func(file_context):
            pass
        for name, macro in file_context.vars.items():
            if isinstance(macro, jinja2.runtime.Macro):
                self._macros.setdefault(name, _returning(macro))

    def __getattr__(self, name: str) -> Callable:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.get(name)

    def _statement(
        self,
        name: str | None = None,
        fetch_result: bool = False,
        auto_begin: bool = True,
        language: str = "sql",
        caller: Callable[[], str] | None = None,
    ) -> str:
        assert caller is not None and language == "sql"
        columns, rows = self._run_query(str(caller()))
        if name is not None:
            self._results[name] = Table(columns, rows if fetch_result else [])
        return ""

    def _load_result(self, name: str) -> Any:
        return _Result(self._results[name])


@dataclass
class _Result:
    table: Table


def _returning(macro: jinja2.runtime.Macro) -> Callable:
    """A macro as dbt calls it: `return(value)` inside gives `value`, else the rendered text."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return macro(*args, **kwargs)
        except _MacroReturn as result:
            return result.value

    call.__name__ = macro.name
    return call
