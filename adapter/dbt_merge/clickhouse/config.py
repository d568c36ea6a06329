"""ClickHouse connection settings from a plugin config and `CLICKHOUSE_*` environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ENV_VARS = {
    "dsn": "CLICKHOUSE_DSN",
    "host": "CLICKHOUSE_HOST",
    "port": "CLICKHOUSE_PORT",
    "username": "CLICKHOUSE_USER",
    "password": "CLICKHOUSE_PASSWORD",
    "database": "CLICKHOUSE_DATABASE",
    "secure": "CLICKHOUSE_SECURE",
}

# chdb only: a ClickHouse server config file (e.g. declaring clusters for Distributed tables).
CHDB_CONFIG_ENV = "CLICKHOUSE_CHDB_CONFIG"


def redact_dsn(dsn: str | None) -> str | None:
    """The DSN with any password replaced by `***`."""
    if not dsn:
        return dsn
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    netloc = parts.netloc.rpartition("@")
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[2]}"))


@dataclass(frozen=True)
class ClickHouseConfig:
    """Connection settings. `repr()` never shows the password (nor one inside the DSN)."""

    dsn: str | None = field(default=None, repr=False)
    host: str | None = None
    port: int | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    database: str | None = None
    secure: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    chdb_options: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (
            f"ClickHouseConfig(dsn={redact_dsn(self.dsn)!r}, host={self.host!r}, "
            f"port={self.port!r}, username={self.username!r}, "
            f"password={'***' if self.password else None!r}, database={self.database!r}, "
            f"secure={self.secure!r})"
        )

    __str__ = __repr__

    @property
    def is_chdb(self) -> bool:
        return bool(self.dsn and self.dsn.startswith("chdb:"))

    @classmethod
    def from_mapping(
        cls, config: Mapping[str, Any], env: Mapping[str, str] | None = None
    ) -> ClickHouseConfig:
        """Settings from `config` (a plugin config), falling back to `CLICKHOUSE_*` env vars."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for key, var in ENV_VARS.items():
            value = config.get(key)
            if value is None or value == "":
                value = env.get(var) or None
            values[key] = value
        if values["port"] is not None:
            values["port"] = int(values["port"])
        secure = values["secure"]
        values["secure"] = str(secure).lower() in ("1", "true", "yes") if secure else False
        chdb_options = dict(config.get("chdb_options") or {})
        if "config-file" not in chdb_options and env.get(CHDB_CONFIG_ENV):
            chdb_options["config-file"] = env[CHDB_CONFIG_ENV]
        return cls(
            settings=dict(config.get("settings") or {}), chdb_options=chdb_options, **values
        )

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `clickhouse_connect.get_client`."""
        kwargs: dict[str, Any] = {"settings": dict(self.settings)}
        if self.dsn:
            kwargs["dsn"] = self.dsn
        if self.database:
            kwargs["database"] = self.database
        if self.is_chdb:
            if self.chdb_options:
                kwargs["chdb_options"] = dict(self.chdb_options)
            return kwargs
        for key in ("host", "port", "username", "password"):
            value = getattr(self, key)
            if value is not None:
                kwargs[key] = value
        if self.secure:
            kwargs["secure"] = True
        return kwargs
