"""Call the dbt package's own macros from Python, outside dbt: the stand-in context every
Python front end renders the merge through (the Parquet merge, and `merge_dataframe` on Spark,
which runs the whole flow, `macros/flow/run_merge.sql`, as the `merge` materialization does).

The macros (`macros/flow` and the folders of its phases: `stage`, `validation`, `plan`,
`schema`, `classify`, `stats`, `write`, `history`; and `utils`) are rendered in a small
stand-in for dbt's macro context:

- `dbt_merge.<name>(...)` and `adapter.dispatch(name, 'dbt_merge')` resolve to the package's
  macros for the engine given (`duckdb__` or `spark__` first, then `default__`), as the dbt
  adapter of that engine resolves them;
- `return(value)` hands a Python value back, as in dbt;
- `config.get` reads the options given to the Python API;
- `{% call statement(...) %}` and `load_result` run SQL through the front end's runner (one per
  engine: a DuckDB connection, a SparkSession);
- `raise_merge_error` calls the front end's on_error (which raises its exception type);
  `exceptions.warn` warns (Python warnings);
- `config.model.config` (read by check_config_keys) holds the options given, `var()` gives its
  default, `modules` has `re` and `datetime`, `tojson`/`fromjson` are dbt's;
- what else a front end's flow needs from dbt (`this`, `load_cached_relation`,
  `adapter.get_columns_in_relation`, ...) it passes in as `context` (built by `door_context`,
  the same names for every door) and `adapter_methods`.

Only what those macros use is provided; any other name fails loudly (strict undefined), so a
macro that starts to need more of dbt's context shows up in the tests, not as a wrong result.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

try:
    import jinja2
except ModuleNotFoundError as missing:
    # an install with another extra (chdb alone): one error naming the extra that brings it
    raise ModuleNotFoundError(
        "dbt_merge's Python doors render the package's macros with Jinja2, which is not "
        "installed here. Install the extra of the door: pip install 'dbt-merge[spark]' for "
        "merge_dataframe, 'dbt-merge[parquet]' for merge_table and merge_parquet_dataset.",
        name=missing.name,
    ) from None

from dbt_merge.errors import MergeError

# Folders of macros/ whose files are plain Jinja macros (materializations and generic tests use
# dbt's own block tags and are not needed here): the flow (macros/flow/run_merge.sql), the
# phases it walks through, and utils.
MACRO_FOLDERS = (
    "flow", "stage", "validation", "plan", "schema", "classify", "stats", "write", "history",
    "utils",
)


def macros_dir() -> Path:
    """The package's macros/ folder: $DBT_MERGE_MACROS, the dbt package shipped inside the Python
    package (`dbt_merge/dbt_package/macros`, in built wheels), or the repository checkout."""
    override = os.environ.get("DBT_MERGE_MACROS")
    if override:
        return Path(override)
    here = Path(__file__).resolve().parent
    for candidate in (here / "dbt_package" / "macros", here.parent.parent / "macros"):
        if (candidate / "plan" / "merge_strategies.sql").is_file():
            return candidate
    raise MergeError(
        "cannot find the dbt_merge macros (looked in dbt_merge/dbt_package/macros and the "
        "checkout's macros/). Set DBT_MERGE_MACROS to the package's macros folder."
    )


#: What the shared macros say to a dbt model, and what a Python door says instead, replaced in
#: this order (a longer phrase before the words inside it), after `Set config(name=...) to one
#: of them` is read as `Pass one of them as name=...`, `Set config(name=...)` as `Pass name=...`
#: and any other `config(name=...)` as `name=...`; then any other unique_key is key_columns
#: (not a quoted 'unique_key': the name a caller gave, in the doors' own refusals). "{source}"
#: is the door's source ("the source", "the DataFrame"), "{Source}" the same at the start of a
#: sentence.
DOOR_WORDING: tuple[tuple[str, str], ...] = (
    # the call's keywords: dbt's unique_key is key_columns
    ("to the model's config", "to the call"),
    ("on the model.", "in the call."),
    ("unique_key column", "key column"),
    ("unique_key value", "key value"),
    # the source, not the model's SELECT
    ("Filter the SELECT itself in the model's SQL instead", "Filter {source} itself instead"),
    ("check the model's SELECT and its upstream models", "check {source} and what makes it"),
    ("the model's SELECT", "{source}"),
    ("The model's SELECT", "{Source}"),
    ("the SELECT", "{source}"),
    ("The SELECT", "{Source}"),
    ("the model's table", "the target"),
    # full_refresh=True, not --full-refresh; the merge, not the model, runs again
    ("rebuild the table with --full-refresh", "rebuild it with full_refresh=True"),
    ("--full-refresh (full_refresh=True)", "full_refresh=True"),
    ("run with --full-refresh", "merge with full_refresh=True"),
    ("Run with --full-refresh", "Merge with full_refresh=True"),
    ("--full-refresh", "full_refresh=True"),
    ("Running the model again", "Running the merge again"),
    ("run this model again", "merge again"),
    ("where dbt runs", "where the merge runs"),
)
#: dbt vars as the Python doors' macros read them: the Python API has no dbt vars, so every var
#: takes its default. Not a setting for users: the tests put a var's other value here to reach
#: the path a dbt project asks for with it (dbt_merge_commit_counts: the write-once path).
_VARS: dict[str, Any] = {}

_CONFIG_CALLS = (
    (re.compile(r"\bSet config\((\w+)=\.\.\.\) to one of them\.?"), r"Pass one of them as \1=..."),
    (re.compile(r"\bSet config\((\w+=[^()]*)\)"), r"Pass \1"),
    (re.compile(r"\bconfig\((\w+=[^()]*)\)"), r"\1"),
)
_UNIQUE_KEY = re.compile(r"(?<![\w'])unique_key(?![\w'])")


def source_wording(message: str, source: str) -> str:
    """A macro's message as a Python door says it: the macros speak to a dbt model (its config(),
    its SELECT, --full-refresh, unique_key); a door has keywords (`key_columns=`, `strategy=`,
    `full_refresh=True`) and a source (`source`: "the source", "the DataFrame"). Every door
    applies this to every message of the macros it raises (DOOR_WORDING)."""
    title = source[:1].upper() + source[1:]
    for pattern, door_words in _CONFIG_CALLS:
        message = pattern.sub(door_words, message)
    for dbt_words, door_words in DOOR_WORDING:
        message = message.replace(dbt_words, door_words.format(source=source, Source=title))
    return _UNIQUE_KEY.sub("key_columns", message)


class _MacroReturn(Exception):
    def __init__(self, value: Any):
        super().__init__()
        self.value = value


def _return(value: Any) -> None:
    raise _MacroReturn(value)


_MACRO_DEF = re.compile(r"{%-?\s*macro\s+(\w+)\s*\(")


class _Undefined(jinja2.StrictUndefined):
    """Strict, except that a missing key or attribute of a value is false in a test, as in dbt:
    the flow writes `counts.held_back or 0` for a count only some merges have. An unknown
    name still fails."""

    def __bool__(self) -> bool:
        if self._undefined_obj is jinja2.utils.missing:
            self._fail_with_undefined_error()
        return False


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
        undefined=_Undefined,
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


@dataclass(frozen=True)
class Column:
    """A column as an adapter's get_columns_in_relation gives it: the name, the type as the
    engine names it, and the name quoted as the engine quotes it (each front end's subclass)."""

    name: str
    dtype: str

    @property
    def column(self) -> str:
        return self.name

    @property
    def data_type(self) -> str:
        return self.dtype

    @property
    def quoted(self) -> str:
        raise NotImplementedError


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
    def __init__(self, error: type[Exception]):
        self._error = error

    def raise_compiler_error(self, message: str) -> None:
        raise self._error(message)

    @staticmethod
    def warn(message: str) -> str:
        warnings.warn(message, stacklevel=2)
        return ""


@dataclass
class _Model:
    """config.model: the node whose config check_config_keys reads (the API's options)."""

    config: dict[str, Any]


class _Adapter:
    """adapter: dispatch (the engine's prefix, then default__), type(), and the methods the
    front end gives (get_columns_in_relation, drop_relation, commit, ...)."""

    def __init__(self, macros: MacroContext, engine: str, methods: dict[str, Callable]):
        self._macros = macros
        self._engine = engine
        self._methods = methods

    def dispatch(self, name: str, package: str | None = None) -> Callable:
        for prefix in (self._engine + "__", "default__"):
            if prefix + name in self._macros.names:
                return self._macros.get(prefix + name)
        raise self._macros.error(f"no macro {name!r} for {self._engine} in the dbt_merge package")

    def type(self) -> str:
        return self._engine

    def __getattr__(self, name: str) -> Callable:
        if name.startswith("_") or name not in self._methods:
            raise AttributeError(name)
        return self._methods[name]


class _Namespace:
    def __init__(self, macros: MacroContext):
        self._macros = macros

    def __getattr__(self, name: str) -> Callable:
        return self._macros.get(name)


def door_context(
    *,
    this: Any,
    model: dict[str, str],
    invocation_id: str,
    full_refresh: bool,
    relation: Any,
    column: Callable[[str, str], Any],
    load_cached_relation: Callable[[Any], Any],
    make_temp_relation: Callable[[Any, str], Any],
    **more: Any,
) -> dict[str, Any]:
    """The names of dbt's context the flow (run_merge) reads, as a Python door gives them: the
    target `this`, the model ({name, unique_id}: messages and the history row), the
    invocation's id, whether the call is a full refresh, `api.Relation` (`relation`: a class or
    a namespace with `create`) and `api.Column.create` (`column`), how to find a relation
    (`load_cached_relation`) and name a work relation (`make_temp_relation`), and dbt's
    `local_md5` and `create_table_as` (a plain CREATE [TEMPORARY] TABLE AS: the door overrides it
    in `more` where its engine needs another). `more`: what else the door's flow reads (its
    writer, its branches)."""
    return {
        "this": this,
        "model": model,
        "invocation_id": invocation_id,
        "invocation_args_dict": {},
        "local_md5": lambda text: hashlib.md5(str(text).encode()).hexdigest(),
        "load_cached_relation": load_cached_relation,
        "make_temp_relation": make_temp_relation,
        "should_full_refresh": lambda: bool(full_refresh),
        "api": SimpleNamespace(Column=SimpleNamespace(create=column), Relation=relation),
        "create_table_as": lambda temporary, relation, sql: (
            f"create {'temporary ' if temporary else ''}table {relation} as (\n{sql}\n)"
        ),
        **more,
    }


class MacroContext:
    """The package's macros bound to one merge: its config and its engine's statement runner.

    run_query(sql) -> (column names, rows) runs SQL for `statement` calls, and run_statement(sql)
    for those whose result is not fetched, when given; on_error(message) raises the error the
    caller wants for `raise_merge_error` (it must not return). engine: the dispatch prefix and
    adapter.type() (duckdb, spark); error: the exception type of the front end (for
    exceptions.raise_compiler_error and the context's own failures); context: more names of
    dbt's context the front end provides; adapter_methods: more methods of `adapter`.
    """

    def __init__(
        self,
        config: dict[str, Any],
        run_query: Callable[..., tuple[list[str], list[tuple]]],
        on_error: Callable[[str], None],
        model_name: str = "merge_parquet_dataset",
        *,
        engine: str = "duckdb",
        error: type[Exception] = MergeError,
        context: dict[str, Any] | None = None,
        adapter_methods: dict[str, Callable] | None = None,
        run_statement: Callable[[str], None] | None = None,
    ):
        self._run_query = run_query
        self._run_statement = run_statement
        self.error = error
        self._results: dict[str, Table] = {}
        overrides: dict[str, Callable] = {"raise_merge_error": on_error}
        context = {
            "return": _return,
            "config": _Config(config),
            "exceptions": _Exceptions(error),
            "adapter": _Adapter(self, engine, adapter_methods or {}),
            "dbt_merge": _Namespace(self),
            "statement": self._statement,
            "load_result": self._load_result,
            "log": lambda *args, **kwargs: "",
            "model": {"name": model_name},
            "execute": True,
            "var": lambda name, default=None: _VARS.get(name, default),
            "modules": {"re": re, "datetime": datetime},
            "tojson": lambda value, sort_keys=False: json.dumps(value, sort_keys=sort_keys),
            "fromjson": lambda text, default=None: json.loads(text) if text else default,
            **(context or {}),
        }
        self._folder = str(macros_dir())
        self._context = context
        self._files = _macro_files(self._folder)
        self._macros: dict[str, Callable] = dict(overrides)
        self.names = frozenset(self._files) | frozenset(overrides)

    def get(self, name: str) -> Callable:
        if name not in self._macros:
            if name not in self._files:
                raise self.error(f"no macro {name!r} in the dbt_merge package")
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
        sql = str(caller())
        if not fetch_result and self._run_statement is not None:
            self._run_statement(sql)
            columns, rows = [], []
        else:
            columns, rows = self._run_query(sql)
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
