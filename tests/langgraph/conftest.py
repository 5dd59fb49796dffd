"""LangGraph's own store tests, run against :class:`LetheStore` in this process and over SQLite.

The ported files build every store as ``LetheStore(...)`` (this module's subclass) or take the
``store`` fixture; the autouse ``engine`` fixture runs each test twice: once with the namespaces
kept in this process, once in a fresh lethe ``SQLiteStore`` file for every store the test builds.
The ports of LangGraph's Postgres store tests override ``engine`` with one whose body is
:func:`over_postgres`: every store they build is over lethe's ``PostgresStore``, in a fresh
database on the session's throwaway PostgreSQL cluster (``tests/conftest.py``).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lethe.integrations import langgraph
from lethe.store import SQLiteStore, Store
from tests._servers import Postgres

_engines: list[Store] = []
_where: list[Path | None] = [None]
_server: list[Postgres | None] = [None]
_databases: list[str] = []
_count = itertools.count()


def _engine() -> Store | None:
    server = _server[0]
    if server is not None:
        return _postgres(server)
    folder = _where[0]
    if folder is None:
        return None
    engine = SQLiteStore(str(folder / f"store-{next(_count)}.db"))
    _engines.append(engine)
    return engine


class LetheStore(langgraph.LetheStore):
    """:class:`lethe.integrations.langgraph.LetheStore` over the engine the running test asks for."""

    def __init__(self, **options: Any) -> None:
        super().__init__(_engine(), **options)


@pytest.fixture(autouse=True, params=["process", "sqlite"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    _where[0] = tmp_path if request.param == "sqlite" else None
    try:
        yield request.param
    finally:
        _where[0] = None
        while _engines:
            _engines.pop().close()


def _postgres(server: Postgres) -> Store:
    import psycopg

    from lethe.store import PostgresStore

    name = f"langgraph{os.getpid()}_{next(_count)}"
    with psycopg.connect(server.dsn(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    _databases.append(name)
    engine = PostgresStore(server.dsn(name))
    _engines.append(engine)
    return engine


def over_postgres(server: Postgres) -> Iterator[str]:
    """The body of an ``engine`` fixture that puts every store a test builds on lethe's
    ``PostgresStore``, each in a fresh database on ``server``, dropped afterwards."""
    import psycopg

    _server[0] = server
    try:
        yield "postgres"
    finally:
        _server[0] = None
        while _engines:
            _engines.pop().close()
        with psycopg.connect(server.dsn(), autocommit=True) as admin:
            while _databases:
                admin.execute(f"DROP DATABASE {_databases.pop()} WITH (FORCE)")


@pytest.fixture
def store(engine: str) -> Iterator[langgraph.LetheStore]:
    with LetheStore() as made:
        yield made
