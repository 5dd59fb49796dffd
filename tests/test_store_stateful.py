"""Several replicas of one shared memory, interleaving writes: each equals a cold replay of the log at its version."""

from __future__ import annotations

import contextlib
import itertools
import os
from pathlib import Path
from typing import Any, ClassVar

import hypothesis.strategies as st
import pytest
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from lethe import Memory
from lethe.store import InMemoryStore, Shared, SQLiteStore, Store, StoreError

from ._servers import Postgres
from ._support import fake_clock, summary

KEYS = st.integers(0, 6)


class Replicas(RuleBasedStateMachine):
    """Three replicas on one store; a fourth, lagging one is opened now and then."""

    store: Store

    def __init__(self) -> None:
        super().__init__()
        self.clock = fake_clock()
        self.store = self.make_store()
        self.replicas = [self.open() for _ in range(3)]
        self.history: dict[int, Memory[Any, Any]] = {0: self.replicas[0].current()}

    def make_store(self) -> Store:
        return InMemoryStore()

    def open(self) -> Shared[Any, Any]:
        template = Memory(max_entries=4, clock_fn=self.clock, summarize_fn=summary)
        return Shared(self.store, "m", template, checkpoint_every=6)

    def _record(self, r: Shared[Any, Any], mem: Memory[Any, Any]) -> None:
        assert r.version not in self.history or self.history[r.version] == mem
        self.history[r.version] = mem

    @rule(i=st.integers(0, 2), key=KEYS, importance=st.sampled_from([0.5, 1.0, 3.0]))
    def put(self, i: int, key: int, importance: float) -> None:
        r = self.replicas[i]
        self._record(r, r.update(lambda m: m.put(f"v{key}", key=key, importance=importance)))

    @rule(i=st.integers(0, 2), key=KEYS)
    def get(self, i: int, key: int) -> None:
        r = self.replicas[i]
        self._record(r, r.update(lambda m: m.get(key)[0] if key in m else m))

    @rule(i=st.integers(0, 2), key=KEYS)
    def delete(self, i: int, key: int) -> None:
        r = self.replicas[i]
        self._record(r, r.update(lambda m: m.delete(key)))

    @rule(i=st.integers(0, 2))
    def evict(self, i: int) -> None:
        r = self.replicas[i]
        self._record(r, r.update(lambda m: m.evict()[0]))

    @rule(seconds=st.sampled_from([1, 600, 7200]))
    def wait(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @rule(i=st.integers(0, 2))
    def catch_up(self, i: int) -> None:
        r = self.replicas[i]
        self._record(r, r.current())

    @precondition(lambda self: len(self.replicas) < 5)
    @rule()
    def open_another(self) -> None:
        self.replicas.append(self.open())

    @invariant()
    def every_replica_equals_a_cold_replay_at_its_version(self) -> None:
        for r in self.replicas:
            mem = r._replica
            if r.version in self.history:
                assert self.history[r.version] == mem
            try:
                replay = r.at(r.version)
            except StoreError:  # compacted away
                continue
            assert replay == mem

    @invariant()
    def a_fresh_open_from_the_current_rows_equals_the_replay(self) -> None:
        fresh = self.open()
        if fresh.version in self.history:
            assert fresh.current() == self.history[fresh.version]
        with contextlib.suppress(StoreError):  # compacted away
            assert fresh.at(fresh.version) == fresh.current()

    @invariant()
    def versions_never_skip(self) -> None:
        versions = [v for v, _ in self.store.read("m", 0)]
        assert versions == list(range(versions[0], versions[0] + len(versions))) if versions else True
        assert max(r.version for r in self.replicas) == (versions[-1] if versions else 0)


class SQLiteReplicas(Replicas):
    def make_store(self) -> Store:
        import tempfile

        self.tmp = tempfile.TemporaryDirectory()
        return SQLiteStore(Path(self.tmp.name) / "store.db")

    def teardown(self) -> None:
        self.store.close()
        self.tmp.cleanup()


TestReplicas = Replicas.TestCase
TestReplicas.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
TestSQLiteReplicas = SQLiteReplicas.TestCase
TestSQLiteReplicas.settings = settings(max_examples=15, stateful_step_count=30, deadline=None)


class PostgresReplicas(Replicas):
    """The same machine on a throwaway PostgreSQL server, a fresh database per example."""

    server: ClassVar[Postgres | None] = None
    made = itertools.count()

    def make_store(self) -> Store:
        import psycopg

        from lethe.store import PostgresStore

        assert self.server is not None
        self.database = f"replicas{os.getpid()}_{next(self.made)}"
        with psycopg.connect(self.server.dsn(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {self.database}")
        return PostgresStore(self.server.dsn(self.database))

    def teardown(self) -> None:
        import psycopg

        self.store.close()
        assert self.server is not None
        with psycopg.connect(self.server.dsn(), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {self.database} WITH (FORCE)")


TestPostgresReplicas = PostgresReplicas.TestCase
TestPostgresReplicas.settings = settings(max_examples=10, stateful_step_count=25, deadline=None)


@pytest.fixture(autouse=True)
def _postgres_for_replicas(request: pytest.FixtureRequest) -> None:
    if request.cls is TestPostgresReplicas:
        PostgresReplicas.server = request.getfixturevalue("postgres_server")


class RedisReplicas(Replicas):
    """The same machine on a throwaway redis-server, a fresh key prefix per example."""

    url: ClassVar[str | None] = None
    made = itertools.count()

    def make_store(self) -> Store:
        from lethe.store import RedisStore

        assert self.url is not None
        return RedisStore(self.url, prefix=f"replicas{os.getpid()}_{next(self.made)}")

    def teardown(self) -> None:
        self.store.close()


TestRedisReplicas = RedisReplicas.TestCase
TestRedisReplicas.settings = settings(max_examples=15, stateful_step_count=30, deadline=None)


@pytest.fixture(autouse=True)
def _redis_for_replicas(request: pytest.FixtureRequest) -> None:
    if request.cls is TestRedisReplicas:
        RedisReplicas.url = request.getfixturevalue("redis_url")
