"""The `db` fixture: the engine a scenario test runs on (parametrize "db" indirectly)."""

from __future__ import annotations

import pytest

from .scenario import Db


@pytest.fixture
def db(request):
    spark = request.getfixturevalue("spark") if request.param == "spark" else None
    port = request.getfixturevalue("thrift") if request.param == "spark_thrift" else None
    handle = Db(request.param, spark, port)
    yield handle
    handle.close()
