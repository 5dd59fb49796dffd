"""Shared fixtures: a hand-driven clock and a memory factory (the helpers live in ``tests/_support.py``)."""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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


def _memory(request: pytest.FixtureRequest, tmp_path: Path, **options: Any) -> Store:
    return InMemoryStore()  # (it takes no options: a test passing some to every engine leaves it out)


def _sqlite(request: pytest.FixtureRequest, tmp_path: Path, **options: Any) -> Store:
    return SQLiteStore(tmp_path / "store.db", **options)


def _postgres(request: pytest.FixtureRequest, tmp_path: Path, **options: Any) -> Store:
    from lethe.store import PostgresStore

    return PostgresStore(request.getfixturevalue("postgres_dsn"), **options)


def _redis(request: pytest.FixtureRequest, tmp_path: Path, **options: Any) -> Store:
    from lethe.store import RedisStore

    url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
    return RedisStore(url, prefix=prefix, **options)


@dataclass(frozen=True)
class Engine:
    """What the tests know of one engine of ``lethe.store``: a row of :data:`_TABLE`."""

    #: Its class's name in ``lethe.store`` (``test_store.py`` checks that every class implementing
    #: ``Store`` is one of these, and that ``lethe.store`` exports each).
    store: str
    #: A new, empty store: ``build(request, tmp_path, **options)`` (a server's fixtures asked of ``request``).
    build: Callable[..., Store]
    #: Its stores live on a server: the tests start a throwaway one (``tests/_servers.py``), and
    #: its tests skip, saying why, where none can run.
    server: bool = False
    #: Its stores live outside the process that opened them (a file, a server): other processes,
    #: forked or spawned, open the same store, and the store holds connections ``close`` ends.
    durable: bool = True


#: Every engine of ``lethe.store``, by the name its tests give it: adding an engine is one row here.
_TABLE: dict[str, Engine] = {
    "memory": Engine("InMemoryStore", _memory, durable=False),
    "sqlite": Engine("SQLiteStore", _sqlite),
    "postgres": Engine("PostgresStore", _postgres, server=True),
    "redis": Engine("RedisStore", _redis, server=True),
}

#: Every engine: the one list the engine tests run over (the ``store`` fixture, the contract
#: suite; the damage suite).  The lists below are drawn from it, never written by hand.
ENGINES: tuple[str, ...] = tuple(_TABLE)
#: Each engine's class's name in ``lethe.store``.
ENGINE_CLASSES: dict[str, str] = {kind: engine.store for kind, engine in _TABLE.items()}
#: The engines on a server (PostgreSQL, Redis): what ``lethe inspect`` reaches by URL
#: (``test_cli_store_urls.py``), and the costly ones (the damage hunt runs them fewer cases).
SERVER_ENGINES: tuple[str, ...] = tuple(kind for kind in ENGINES if _TABLE[kind].server)
#: The engines needing no server (InMemoryStore, SQLite): cheap, so the tests that run a
#: property's many examples, or every hook failing around a commit, run on these.
LOCAL_ENGINES: tuple[str, ...] = tuple(kind for kind in ENGINES if not _TABLE[kind].server)
#: The engines whose stores outlive the process (everything but InMemoryStore): the tests of
#: processes sharing one store (fork, spawn), of ``close`` ending connections, of rows changed
#: behind a store's back by another client, and of the last version a stored int holds.
DURABLE_ENGINES: tuple[str, ...] = tuple(kind for kind in ENGINES if _TABLE[kind].durable)


def make_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path, **options: Any) -> Store:
    """A new, empty store of the engine ``kind`` (one of :data:`ENGINES`), built with ``options``."""
    if kind not in _TABLE:
        raise ValueError(f"no engine {kind!r}: one of {ENGINES}")
    return _TABLE[kind].build(request, tmp_path, **options)


@pytest.fixture(params=ENGINES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Every engine in turn, new and empty: the same test runs on each."""
    made = make_store(request.param, request, tmp_path)
    yield made
    made.close()


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory another user can reach (pytest's own are its owner's alone)."""
    made = Path(tempfile.mkdtemp(prefix="lethe-ro-"))
    made.chmod(0o755)
    try:
        yield made
    finally:
        for item in (made, *made.iterdir()):
            item.chmod(0o755 if item.is_dir() else 0o644)
        shutil.rmtree(made)


@pytest.fixture(params=["numpy", "python"])
def rows(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run a search test with numpy's float32 rows and with the pure-Python ones."""
    from lethe.search import _dense

    if request.param == "numpy":
        pytest.importorskip("numpy")
    saved = _dense.use_numpy
    _dense.use_numpy = request.param == "numpy"
    yield request.param
    _dense.use_numpy = saved
