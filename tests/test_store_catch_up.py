"""A replica catching up while other writers commit and compact: it always gets there (never a
false gap or a false "history went back"), the log stays bounded however briefly each writer
lives, and a clock running ahead is reported on every path."""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path
from typing import Any

import pytest

from lethe import ClockWarning, ManualClock, Memory
from lethe.store import Shared, SQLiteStore, Store

from ._support import fake_clock


def _put(i: int) -> Any:
    return lambda m: m.put(i, key=i % 10)


def _template(clock: ManualClock | None = None) -> Memory[Any, Any]:
    return Memory(max_entries=10, clock_fn=clock or fake_clock())


def test_a_reload_overtaken_by_compaction_starts_again(tmp_path: Path) -> None:
    # The reader fell more than two checkpoint intervals behind, so it reloads the current
    # entries; before it reads the log after them, the writer commits (and compacts) past them.
    with SQLiteStore(tmp_path / "m.db") as store:
        writer: Shared[Any, Any] = Shared(store, "m", _template(), checkpoint_every=4)
        reader: Shared[Any, Any] = Shared(store, "m", _template(), checkpoint_every=4)
        for i in range(20):
            writer.update(_put(i))
        real_load = store.load
        overtaken = []

        def load(name: str) -> tuple[int, str, list[str]]:
            found = real_load(name)
            if not overtaken:  # once: the next reload finds the log in place
                overtaken.append(found[0])
                for i in range(20):
                    writer.update(_put(100 + i))
            return found

        store.load = load  # type: ignore[method-assign]
        assert reader.current().to_dict() == writer.current().to_dict()
        assert reader.version == writer.version == 40
        assert overtaken == [20]
        fresh: Shared[Any, Any] = Shared(store, "m", _template(), checkpoint_every=4)
        assert fresh.current().to_dict() == reader.current().to_dict()


def _log_rows(path: Path) -> tuple[int, int]:
    with sqlite3.connect(path) as conn:
        log = conn.execute("SELECT count(*) FROM log").fetchone()[0]
        checkpoints = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    conn.close()
    return int(log), int(checkpoints)


def test_writers_that_each_commit_less_than_an_interval_keep_the_log_bounded(tmp_path: Path) -> None:
    # One Shared per request (a job, a CLI run): each commits once, fewer than checkpoint_every.
    path = tmp_path / "m.db"
    with SQLiteStore(path) as store:
        for i in range(200):
            Shared(store, "bot", _template(), checkpoint_every=8).update(_put(i))
        log, checkpoints = _log_rows(path)
        assert log <= 3 * 8
        assert checkpoints <= 3
        fresh: Shared[Any, Any] = Shared(store, "bot", _template(), checkpoint_every=8)
        assert fresh.version == 200
        assert sorted(e.value for e in fresh.current()) == list(range(190, 200))


def test_a_clock_ahead_is_reported_when_catching_up_by_a_reload(tmp_path: Path) -> None:
    reader_clock = fake_clock()
    writer_clock = ManualClock(reader_clock.now)
    with SQLiteStore(tmp_path / "m.db") as store:
        reader: Shared[Any, Any] = Shared(store, "m", _template(reader_clock), checkpoint_every=2)
        writer: Shared[Any, Any] = Shared(store, "m", _template(writer_clock), checkpoint_every=2)
        writer_clock.advance(30)  # the writer's clock runs 30 s ahead
        for i in range(10):
            writer.update(_put(i))
        with pytest.warns(ClockWarning, match="30.000 s ahead"):
            reader.current()
        assert reader.version == 10
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            reader.current()  # told once until it passes


def _read_matches_the_log(store: Store, name: str, latest: int) -> None:
    rows = store.read(name, 0)
    assert [v for v, _ in rows] == list(range(1, latest + 1))
    assert [v for v, _ in store.read(name, 1500, 1600)] == list(range(1501, 1601))
    assert [v for v, _ in store.read(name, latest - 3)] == list(range(latest - 2, latest + 1))
    assert store.read(name, latest) == []
    assert dict(store.read(name, 999, 1001)) == {v: r for v, r in rows if v in (1000, 1001)}


def test_a_redis_log_is_read_at_one_instant_in_every_range(redis_url: str, redis_prefix: str) -> None:
    from lethe.store import RedisStore

    with RedisStore(redis_url, prefix=redis_prefix) as store:
        writer: Shared[Any, Any] = Shared(store, "m", _template(), checkpoint_every=5000)
        for i in range(2100):  # more than one batch of the script's reads
            writer.update(_put(i))
        _read_matches_the_log(store, "m", 2100)
        with pytest.raises(KeyError):
            store.read("nobody", 0)


def test_postgres_waiters_on_one_store_do_not_hold_each_other_up(postgres_dsn: str) -> None:
    # Threads of one PostgresStore share its listening connection: one waiting for a quiet name
    # held it for a whole slice (10 s), so another thread's 0.5 s wait took 7.7 s, and a commit it
    # waited for 0.2 s in woke it after 9.7 s.
    import threading
    import time

    from lethe.store import PostgresStore

    with PostgresStore(postgres_dsn) as store:
        quiet: Shared[Any, Any] = Shared(store, "quiet", _template())
        busy: Shared[Any, Any] = Shared(store, "busy", _template())
        writer: Shared[Any, Any] = Shared(store, "busy", _template())
        stop = threading.Event()

        def wait_on_quiet() -> None:
            while not stop.is_set():
                quiet.wait(timeout=30)

        waiter = threading.Thread(target=wait_on_quiet, daemon=True)
        waiter.start()
        time.sleep(0.3)  # the other thread is listening
        started = time.monotonic()
        assert busy.wait(timeout=0.5) is False
        assert time.monotonic() - started < 3.0
        committer = threading.Timer(0.2, lambda: writer.update(_put(1)))
        committer.start()
        started = time.monotonic()
        assert busy.wait(timeout=20) is True
        assert time.monotonic() - started < 3.0
        assert busy.version == 1
        committer.join()
        stop.set()
        Shared(store, "quiet", _template()).update(_put(2))  # wakes the waiter, which then stops
        waiter.join(timeout=30)
        assert not waiter.is_alive()
