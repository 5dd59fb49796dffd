"""Round trips per commit on the engines on a server, counted by a TCP proxy between client and server.

A writer alone on its memory sends each commit at once, with the version and the
head it was made on, and reads nothing first: one round trip.  A lost race reads
what it missed; among other writers a commit reads first, so ``fn`` runs once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from lethe import ManualClock, Memory
from lethe.store import Shared, SQLiteStore, StoreError

from ._proxy import Proxy
from ._servers import Postgres
from ._support import fake_clock
from .test_store_history import _copy

if TYPE_CHECKING:
    from lethe.store import Store


@pytest.fixture
def clock() -> ManualClock:
    return fake_clock()


@pytest.fixture(params=["postgres", "redis"])
def proxied(request: pytest.FixtureRequest) -> Iterator[tuple[Proxy, Callable[[], Store]]]:
    """A proxy to a server, and a function opening a store of one empty namespace through it."""
    if request.param == "postgres":
        pytest.importorskip("psycopg")
        from lethe.store import PostgresStore

        server: Postgres = request.getfixturevalue("postgres_server")
        dsn: str = request.getfixturevalue("postgres_dsn")
        with Proxy(server.port) as proxy:
            yield proxy, lambda: PostgresStore(dsn.replace(f":{server.port}/", f":{proxy.port}/"))
    else:
        pytest.importorskip("redis")
        from lethe.store import RedisStore

        url: str = request.getfixturevalue("redis_url")
        prefix: str = request.getfixturevalue("redis_prefix")
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        with Proxy(port) as proxy:
            yield proxy, lambda: RedisStore(url.replace(f":{port}/", f":{proxy.port}/"), prefix=prefix)


@contextmanager
def _two_writers(
    open_store: Callable[[], Store], clock: ManualClock
) -> Iterator[tuple[Shared[Any, Any], Shared[Any, Any]]]:
    """Two writers of the memory "bot", each on a store object (a connection) of its own."""
    a_store, b_store = open_store(), open_store()
    try:
        yield Shared(a_store, "bot", Memory(clock_fn=clock)), Shared(b_store, "bot", Memory(clock_fn=clock))
    finally:
        a_store.close()
        b_store.close()


def _counting(ran: list[int], value: int) -> Callable[[Memory[Any, Any]], Memory[Any, Any]]:
    def put(m: Memory[Any, Any]) -> Memory[Any, Any]:
        ran.append(value)
        return m.put(value, key=value)

    return put


def test_a_writer_alone_commits_in_one_round_trip(
    proxied: tuple[Proxy, Callable[[], Store]], clock: ManualClock
) -> None:
    proxy, open_store = proxied
    store = open_store()
    try:
        shared = Shared(store, "bot", Memory(clock_fn=clock))
        ran: list[int] = []
        before = proxy.round_trips
        shared.update(_counting(ran, 0))  # (RedisStore loaded its scripts when it was made)
        assert proxy.round_trips - before == 1
        for i in range(1, 6):  # psycopg prepares a statement on its sixth run: a round trip more, once
            shared.update(_counting(ran, i))
        before = proxy.round_trips
        for i in range(6, 26):
            clock.advance(1)
            shared.update(_counting(ran, i))
        assert proxy.round_trips - before == 20
        assert ran == list(range(26))
        assert shared.version == 26
    finally:
        store.close()


def test_a_lost_race_reads_what_it_missed_and_then_writers_read_first(
    proxied: tuple[Proxy, Callable[[], Store]], clock: ManualClock
) -> None:
    proxy, open_store = proxied
    with _two_writers(open_store, clock) as (a, b):
        ran: list[int] = []
        a.update(_counting(ran, 1))
        b.update(_counting(ran, 2))  # b had not read version 1: its commit lost, read it, ran again
        assert ran == [1, 2, 2]
        ran.clear()
        # Taking turns: a had not read version 2 and lost once; from then on each reads what
        # the other wrote first, and fn runs once.
        for i in range(3, 9):
            (a if i % 2 else b).update(_counting(ran, i))
        assert ran == [3, 3, 4, 5, 6, 7, 8]
        # Alone again: a reads first until a read finds nothing new, then sends at once.
        a.update(_counting(ran, 9))
        a.update(_counting(ran, 10))
        for i in range(11, 17):  # (psycopg prepares its statement on the sixth run)
            a.update(_counting(ran, i))
        before = proxy.round_trips
        for i in range(17, 22):
            a.update(_counting(ran, i))
        assert proxy.round_trips - before == 5
        assert sorted(a.current().keys()) == sorted(b.current().keys()) == list(range(1, 22))


def test_on_postgresql_a_locked_commit_reads_what_it_missed_in_the_round_trip_that_takes_the_lock(
    postgres_server: Postgres, postgres_dsn: str, clock: ManualClock
) -> None:
    # Among other writers a commit takes the writer lock, reads what it missed and commits: the
    # read goes in the lock's round trip, so two in all.
    pytest.importorskip("psycopg")
    from lethe.store import PostgresStore

    with Proxy(postgres_server.port) as proxy:
        via = postgres_dsn.replace(f":{postgres_server.port}/", f":{proxy.port}/")
        with _two_writers(lambda: PostgresStore(via), clock) as (a, b):
            ran: list[int] = []
            for i in range(1, 15):  # (psycopg prepares each statement on its sixth run)
                (a if i % 2 else b).update(_counting(ran, i))
            counts = []
            for i in range(15, 21):
                before = proxy.round_trips
                (a if i % 2 else b).update(_counting(ran, i))
                counts.append(proxy.round_trips - before)
            assert counts == [2] * 6
            assert ran[-6:] == list(range(15, 21))  # fn ran once for each
            assert sorted(a.current().keys()) == list(range(1, 21))


def test_a_function_that_fails_on_a_replica_not_read_runs_again_on_the_latest(
    proxied: tuple[Proxy, Callable[[], Store]], clock: ManualClock
) -> None:
    _, open_store = proxied
    with _two_writers(open_store, clock) as (a, b):
        a.update(lambda m: m.put("fixed", key="deploy"))
        # b has not read version 1: get raises KeyError there, and runs again on version 1.
        assert b.transact(lambda m: m.get("deploy")).value == "fixed"
        # A function that changes nothing answers from the latest version too.
        a.update(lambda m: m.put("rolled back", key="deploy"))
        assert b.transact(lambda m: (m, m.peek("deploy").value)) == "rolled back"
        # And one that fails on the latest version fails, nothing written.
        with pytest.raises(KeyError):
            b.update(lambda m: m.get("missing"))
        assert b.version == a.version == 3


def test_a_commit_made_on_a_lost_history_is_not_written_over_another(tmp_path: Path, clock: ManualClock) -> None:
    # The store went back to version 1 and other commits brought it to version 3 again: a writer
    # that saw the lost version 3 sends its commit at 4 without reading first, and the head it
    # was made on is not the store's, so nothing is written.
    path, backup = tmp_path / "store.db", tmp_path / "backup.db"
    with SQLiteStore(path) as store:
        writer = Shared(store, "bot", Memory(clock_fn=clock))
        writer.update(lambda m: m.put("a", key="a"))
        _copy(path, backup)
        writer.update(lambda m: m.put("b", key="b"))
        writer.update(lambda m: m.put("c", key="c"))
        _copy(backup, path)
        with SQLiteStore(path) as other_store:
            other = Shared(other_store, "bot", Memory(clock_fn=clock))
            other.update(lambda m: m.put("x", key="x"))
            other.update(lambda m: m.put("y", key="y"))
            assert other.version == writer.version == 3
            with pytest.raises(StoreError, match="went back"):
                writer.update(lambda m: m.put("d", key="d"))
            assert sorted(other.current().keys()) == ["a", "x", "y"]
            assert other.version == 3
            writer.update(lambda m: m.put("d", key="d"))  # goes on from the store's history
            assert sorted(other.current().keys()) == ["a", "d", "x", "y"]
