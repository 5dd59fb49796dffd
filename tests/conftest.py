"""Shared fixtures: a hand-driven clock and a memory factory (the helpers live in ``tests/_support.py``)."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from lethe import ManualClock, Memory
from lethe.store import InMemoryStore, SQLiteStore, Store

from ._servers import Postgres, postgres, postgres_unavailable, redis_server, redis_unavailable
from ._support import HOUR, START, fake_clock

__all__ = ["HOUR", "START"]

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("long", max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _recursion_limit() -> Iterator[None]:
    """Every test starts at the interpreter's recursion limit: mypy, run in-process by the typing
    tests, raises it to 2**14 and leaves it there (and a deeply nested value then encodes)."""
    limit = sys.getrecursionlimit()
    yield
    sys.setrecursionlimit(limit)


@pytest.fixture
def clock() -> ManualClock:
    """The fake clock, standing at ``START`` until advanced."""
    return fake_clock()


@pytest.fixture
def make(clock: ManualClock) -> Callable[..., Memory[Any, Any]]:
    """Build a memory on the fake clock."""

    def build(**kwargs: Any) -> Memory[Any, Any]:
        kwargs.setdefault("clock_fn", clock)
        return Memory(**kwargs)

    return build


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Postgres]:
    """One throwaway PostgreSQL cluster for the session (skips where none can run)."""
    why = postgres_unavailable()
    if why is not None:
        pytest.skip(why)
    with postgres() as server:
        yield server


_databases = itertools.count()


@pytest.fixture
def postgres_dsn(postgres_server: Postgres) -> Iterator[str]:
    """A fresh, empty database on the session's cluster, dropped afterwards."""
    import psycopg

    name = f"t{os.getpid()}_{next(_databases)}"
    with psycopg.connect(postgres_server.dsn(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    yield postgres_server.dsn(name)
    with psycopg.connect(postgres_server.dsn(), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """One throwaway redis-server for the session (skips where none can run)."""
    why = redis_unavailable()
    if why is not None:
        pytest.skip(why)
    with redis_server() as url:
        yield url


@pytest.fixture
def redis_prefix() -> str:
    """A key prefix no other test uses, so tests share the session's server."""
    return f"t{os.getpid()}_{next(_databases)}"


#: Every engine of ``lethe.store``: the one list the engine tests run over (PostgreSQL and
#: Redis on throwaway servers; their tests skip, saying why, where those cannot run).
ENGINES = ("memory", "sqlite", "postgres", "redis")


def make_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path, **options: Any) -> Store:
    """A new, empty store of the engine ``kind`` (one of :data:`ENGINES`), built with ``options``."""
    if kind == "memory":
        return InMemoryStore()
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "store.db", **options)
    if kind == "postgres":
        from lethe.store import PostgresStore

        return PostgresStore(request.getfixturevalue("postgres_dsn"), **options)
    if kind == "redis":
        from lethe.store import RedisStore

        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
        return RedisStore(url, prefix=prefix, **options)
    raise ValueError(f"no engine {kind!r}: one of {ENGINES}")


@pytest.fixture(params=ENGINES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Every engine in turn, new and empty: the same test runs on each."""
    made = make_store(request.param, request, tmp_path)
    yield made
    made.close()
