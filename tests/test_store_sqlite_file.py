"""SQLiteStore and its file: parameters checked, opened at once by many processes, damage
reported as StoreError (never a raw sqlite3 error), other programs' databases left alone."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from lethe import Memory
from lethe.store import Shared, SQLiteStore, StoreError

from .test_store_processes import in_fresh_process

# -- parameters ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"durable": "no"}, TypeError, "durable must be a bool, got str"),
        ({"durable": 1}, TypeError, "durable must be a bool, got int"),
        ({"timeout": "5"}, TypeError, "timeout must be a number of seconds, got str"),
        ({"timeout": float("nan")}, ValueError, "timeout must not be NaN"),
        ({"timeout": -5}, ValueError, "timeout must be a finite number of seconds >= 0, got -5"),
        ({"timeout": float("inf")}, ValueError, "timeout must be a finite number of seconds >= 0, got inf"),
    ],
)
def test_bad_parameters_are_named_and_nothing_is_created(
    tmp_path: Path, kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    path = tmp_path / "m.db"
    with pytest.raises(error, match=f"^{message}$"):
        SQLiteStore(path, **kwargs)
    assert not path.exists()


def test_a_path_must_be_a_path(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"^path must be a str or an os.PathLike, got int$"):
        SQLiteStore(5)  # type: ignore[arg-type]


@pytest.mark.parametrize("where", ["missing/m.db", "."])
def test_a_path_that_cannot_be_opened_is_named(tmp_path: Path, where: str) -> None:
    path = tmp_path / where
    with pytest.raises(StoreError, match="cannot open the database file") as caught:
        SQLiteStore(path)
    assert str(path) in str(caught.value)


def test_timeout_zero_is_allowed(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db", timeout=0) as store:
        assert store.timeout == 0.0


# -- many processes open a new file at once --------------------------------------------------


def _open_and_close(path: str, barrier: Any, answers: Any) -> None:
    barrier.wait()
    try:
        SQLiteStore(path).close()
        answers.put("ok")
    except BaseException as exc:
        answers.put(f"{type(exc).__module__}.{type(exc).__name__}: {exc}")


def _open_at_once(where: str) -> dict[str, int]:
    """Eight forked processes open each of 30 new files in ``where`` at once; how many got each answer."""
    ctx = multiprocessing.get_context("fork")
    seen: dict[str, int] = {}
    for i in range(30):
        path = os.path.join(where, f"new-{i}.db")
        barrier, answers = ctx.Barrier(8), ctx.Queue()
        workers = [ctx.Process(target=_open_and_close, args=(path, barrier, answers)) for _ in range(8)]
        for w in workers:
            w.start()
        for _ in workers:
            answer = answers.get(timeout=60)
            seen[answer] = seen.get(answer, 0) + 1
        for w in workers:
            w.join(timeout=60)
    return seen


@pytest.mark.skipif(sys.platform == "win32", reason="fork start method")
def test_processes_opening_a_new_file_at_once_all_get_the_store(tmp_path: Path) -> None:
    # The switch to WAL mode needs the file to itself, and SQLite answered "locked" at once (not
    # after the busy timeout) to the processes that lost the race: about 1 open in 100 failed.
    # Forked from a process where no thread runs.
    assert in_fresh_process(_open_at_once, str(tmp_path)) == {"ok": 240}


# -- damage --------------------------------------------------------------------------------


def _store_with(path: Path, keys: int = 1) -> None:
    with SQLiteStore(path) as store:
        shared: Shared[Any, Any] = Shared(store, "n", Memory())
        for k in range(keys):
            shared.update(lambda m, k=k: m.put("hello" if k == 0 else "x" * 200, key=k))


def test_a_row_that_is_not_utf8_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    _store_with(path)
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE entries SET entry = CAST(replace(CAST(entry AS BLOB), CAST('hello' AS BLOB), x'68ff6c6c6f') AS TEXT)"
    )
    conn.commit()
    conn.close()
    with SQLiteStore(path) as store, pytest.raises(StoreError, match="decode"):
        Shared(store, "n", Memory())


def test_a_log_record_that_is_not_utf8_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SQLiteStore(path) as store:
        follower: Shared[Any, Any] = Shared(store, "n", Memory())
        writer: Shared[Any, Any] = Shared(store, "n", Memory())
        writer.update(lambda m: m.put("hello", key="k"))
        conn = sqlite3.connect(path)
        conn.execute(
            "UPDATE log SET record = CAST(replace(CAST(record AS BLOB), CAST('hello' AS BLOB), x'68ff6c6c6f') AS TEXT)"
        )
        conn.commit()
        conn.close()
        with pytest.raises(StoreError, match="decode"):
            follower.current()


def test_a_malformed_page_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    _store_with(path, keys=50)
    size = path.stat().st_size
    assert size > 4 * 4096
    with open(path, "r+b") as f:
        f.seek(3 * 4096)
        f.write(b"\xa5" * 4096)
    with pytest.raises(StoreError, match="malformed"), SQLiteStore(path) as store:
        Shared(store, "n", Memory()).current()


# -- other programs' databases ---------------------------------------------------------------


def _other_database(path: Path, *statements: str) -> bytes:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return path.read_bytes()


@pytest.mark.parametrize(
    "statements",
    [
        ("CREATE VIEW v AS SELECT 1",),
        ("PRAGMA user_version = 7", "CREATE VIEW v AS SELECT 1"),
        ("PRAGMA user_version = 7",),
        ("PRAGMA application_id = 1234",),
    ],
    ids=["a view", "a view and a version", "a version only", "an application id"],
)
def test_a_database_of_another_program_is_refused_unchanged(tmp_path: Path, statements: tuple[str, ...]) -> None:
    path = tmp_path / "other.db"
    before = _other_database(path, *statements)
    with pytest.raises(StoreError, match="not a lethe store"):
        SQLiteStore(path)
    assert path.read_bytes() == before
    assert not Path(f"{path}-wal").exists() or os.path.getsize(f"{path}-wal") == 0


def test_an_empty_sqlite_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    _other_database(path)  # a database with nothing in it, as sqlite3.connect leaves one
    with SQLiteStore(path) as store:
        assert store.names() == []


# -- what a row holds ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "put",
    [
        {"value": "\ud800x", "key": "value"},
        {"value": "v", "key": "\udcff"},
        {"value": "v", "key": "meta", "metadata": {"k": "\ud800"}},
        {"value": ["\ud83d", "ünïcode ✓"], "key": "mixed"},
    ],
    ids=["value", "key", "metadata", "mixed"],
)
def test_a_lone_surrogate_is_stored_and_read_back(tmp_path: Path, put: dict[str, Any]) -> None:
    # A str may hold one; UTF-8 cannot encode it, and the engine raised UnicodeEncodeError.
    path = tmp_path / "m.db"
    value = put.pop("value")
    with SQLiteStore(path) as store:
        writer: Shared[Any, Any] = Shared(store, "n", Memory())
        wrote = writer.update(lambda m: m.put(value, **put))
        follower: Shared[Any, Any] = Shared(store, "n", Memory())
        assert follower.current() == wrote
    with SQLiteStore(path) as store:
        assert Shared(store, "n", Memory()).current() == wrote


def test_instants_after_2255_are_stored_to_the_microsecond(tmp_path: Path) -> None:
    # Microseconds since 1970 pass 2**53 in 2255: a float count lost the last one.
    from datetime import datetime, timedelta, timezone

    from lethe import ManualClock

    clock = ManualClock(datetime(9000, 1, 1, 0, 0, 0, 123457, tzinfo=timezone.utc))
    path = tmp_path / "m.db"
    with SQLiteStore(path) as store:
        writer: Shared[Any, Any] = Shared(store, "f", Memory(clock_fn=clock), max_clock_skew=None)
        deadline = clock.now + timedelta(days=1, microseconds=3)
        wrote = writer.update(lambda m: m.put("x", key="k", expires_at=deadline))
    with SQLiteStore(path) as store:
        read = Shared(store, "f", Memory(clock_fn=clock), max_clock_skew=None).current()
    entry = read.peek("k")
    assert entry is not None
    assert entry.inserted_at.microsecond == 123457
    assert entry.expires_at == deadline
    assert read == wrote


@pytest.mark.parametrize("name", ["a\x00b", "\ud800"])
def test_a_name_no_engine_can_hold_is_refused_by_name(tmp_path: Path, name: str) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        with pytest.raises(ValueError, match=r"^name must be text without NUL characters or lone surrogates"):
            Shared(store, name, Memory())
        assert store.names() == []


# -- hooks -----------------------------------------------------------------------------------


def test_a_failing_on_evict_reaches_the_caller_with_the_commit_in_place(tmp_path: Path) -> None:
    heard: list[Any] = []

    def on_evict(entries: Any) -> None:
        heard.append(entries)
        raise RuntimeError("archive is down")

    with SQLiteStore(tmp_path / "m.db") as store:
        shared: Shared[Any, Any] = Shared(store, "n", Memory(max_entries=1, on_evict=on_evict))
        shared.update(lambda m: m.put("a", key="a"))
        with pytest.raises(RuntimeError, match="archive is down") as caught:
            shared.update(lambda m: m.put("b", key="b"))
        # The commit stands, and the replica and every other reader show it.
        assert shared.version == 2
        assert [e.key for e in shared.current()] == ["b"]
        assert [e.key for e in Shared(store, "n", Memory(max_entries=1)).current()] == ["b"]
        assert [[e.key for e in batch] for batch in heard] == [["a"]]
        if sys.version_info >= (3, 11):
            assert "version 2 of 'n' was committed" in "".join(caught.value.__notes__)


def test_a_value_nested_deeper_than_json_goes_is_refused_by_key(tmp_path: Path) -> None:
    deep: list[Any] = []
    for _ in range(100_000):  # past the recursion limit of every Python, however a test runner set it
        deep = [deep]
    with SQLiteStore(tmp_path / "m.db") as store:
        shared: Shared[Any, Any] = Shared(store, "n", Memory())
        with pytest.raises(ValueError, match=r"^key 'deep': its value or summary cannot be saved as JSON"):
            shared.update(lambda m: m.put(deep, key="deep"))
        assert shared.version == 0
        assert len(Shared(store, "n", Memory()).current()) == 0
