"""Connection settings: plugin config over environment, and passwords kept out of logs."""

from __future__ import annotations

import logging

import pytest
from dbt_merge.clickhouse.client import connect
from dbt_merge.clickhouse.config import ClickHouseConfig, redact_dsn

SECRET = "pw-9f8e7d-never-shown"


def test_config_wins_over_environment():
    env = {
        "CLICKHOUSE_HOST": "env-host",
        "CLICKHOUSE_PORT": "8443",
        "CLICKHOUSE_USER": "envu",
        "CLICKHOUSE_PASSWORD": SECRET,
        "CLICKHOUSE_SECURE": "true",
    }
    config = ClickHouseConfig.from_mapping({"host": "cfg-host", "username": ""}, env)
    assert (config.host, config.port, config.username) == ("cfg-host", 8443, "envu")
    assert config.password == SECRET and config.secure is True
    assert config.client_kwargs() == {
        "settings": {},
        "host": "cfg-host",
        "port": 8443,
        "username": "envu",
        "password": SECRET,
        "secure": True,
    }


def test_http_dsn_is_passed_through():
    config = ClickHouseConfig.from_mapping(
        {"dsn": f"https://u:{SECRET}@ch.example.com:8443/sales", "settings": {"max_threads": 2}},
        {},
    )
    kwargs = config.client_kwargs()
    assert kwargs["dsn"].startswith("https://") and kwargs["settings"] == {"max_threads": 2}
    assert not config.is_chdb


def test_chdb_dsn_takes_only_chdb_arguments():
    env = {"CLICKHOUSE_PASSWORD": SECRET, "CLICKHOUSE_CHDB_CONFIG": "/etc/ch.xml"}
    config = ClickHouseConfig.from_mapping({"dsn": "chdb:///data/ch"}, env)
    assert config.client_kwargs() == {
        "settings": {},
        "dsn": "chdb:///data/ch",
        "chdb_options": {"config-file": "/etc/ch.xml"},
    }


def test_repr_and_str_hide_passwords():
    config = ClickHouseConfig(dsn=f"http://alice:{SECRET}@h:8123", password=SECRET)
    for text in (repr(config), str(config), f"{config}"):
        assert SECRET not in text
        assert "alice:***@h:8123" in text and "password='***'" in text
    assert redact_dsn("chdb:///x") == "chdb:///x"


@pytest.mark.clickhouse
def test_connect_logs_without_password(chdb_dsn, caplog):
    caplog.set_level(logging.DEBUG)
    client = connect(ClickHouseConfig.from_mapping({"dsn": chdb_dsn, "password": SECRET}))
    assert client.query("SELECT 1").result_rows == [(1,)]
    assert "connecting to ClickHouse" in caplog.text
    assert SECRET not in caplog.text
