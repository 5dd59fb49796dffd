"""lethe.store when the store's history goes back: a replica that saw versions the store lost
(a server restarted without its latest writes, a restored backup) says so once and follows the store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lethe import ManualClock, Memory
from lethe.store import Shared, SQLiteStore, StoreError

from ._support import fake_clock


def _copy(source: Path, target: Path) -> None:
    """Copy a live SQLite database with SQLite's backup API (other connections see the result)."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    src.close()
    dst.close()


def _template(clock: ManualClock) -> Memory[Any, Any]:
    return Memory(max_entries=3, clock_fn=clock)


@pytest.fixture
def clock() -> ManualClock:
    return fake_clock()


def _commits(shared: Shared[Any, Any], clock: ManualClock, values: list[str]) -> None:
    for v in values:
        clock.advance(1)
        shared.update(lambda m, v=v: m.put(v, key=v))


def test_a_writer_ahead_of_a_store_that_went_back_is_told_once_and_goes_on(tmp_path: Path, clock: ManualClock) -> None:
    path, backup = tmp_path / "store.db", tmp_path / "backup.db"
    with SQLiteStore(path) as store:
        shared = Shared(store, "bot", _template(clock))
        _commits(shared, clock, ["a", "b"])
        _copy(path, backup)  # the store at version 2
        _commits(shared, clock, ["c", "d"])
        assert shared.version == 4
        _copy(backup, path)  # back to version 2: versions 3 and 4 are lost

        with pytest.raises(StoreError, match=r"went back: this replica saw version 4.*holds version 2"):
            shared.update(lambda m: m.put("e", key="e"))
        assert shared.version == 2
        assert sorted(shared.current().keys()) == ["a", "b"]  # the store's state, not the lost one

        shared.update(lambda m: m.put("e", key="e"))  # goes on from the store's version
        assert shared.version == 3
        cold = Shared(store, "bot", _template(clock))
        assert cold.current() == shared.current()
        assert sorted(cold.current().keys()) == ["a", "b", "e"]


def test_a_reader_meeting_another_history_is_told_once_and_follows_it(tmp_path: Path, clock: ManualClock) -> None:
    path, backup = tmp_path / "store.db", tmp_path / "backup.db"
    with SQLiteStore(path) as store:
        reader = Shared(store, "bot", _template(clock))
        _commits(reader, clock, ["a"])
        _copy(path, backup)
        _commits(reader, clock, ["b", "c"])
        _copy(backup, path)  # back to version 1
        writer = Shared(store, "bot", _template(clock))
        _commits(writer, clock, ["x", "y", "z"])  # versions 2, 3, 4 on the restored history

        # The reader saw 2 and 3 of the lost history; version 4 was made on another version 3.
        with pytest.raises(StoreError, match="went back"):
            reader.current()
        assert reader.version == 4
        assert reader.current() == writer.current()
        assert [k for _, gone in reader.evictions(1) for k in (e.key for e in gone)] == ["a"]


def test_the_chain_of_versions_is_in_the_log(tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / "store.db"
    with SQLiteStore(path) as store:
        shared = Shared(store, "bot", _template(clock))
        _commits(shared, clock, ["a", "b", "c"])
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT version, head, record FROM log ORDER BY version").fetchall()
        (zero,) = conn.execute("SELECT head FROM checkpoints WHERE version = 0").fetchone()
    conn.close()
    tips = [json.loads(zero)[3]] + [json.loads(head)[3] for _, head, _ in rows]
    assert len(set(tips)) == 4
    for (_, head, record), prev in zip(rows, tips):
        assert json.loads(record)["prev"] == prev
        assert json.loads(record)["head"] == json.loads(head)


def test_a_log_record_on_another_version_is_named_by_at(tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / "store.db"
    with SQLiteStore(path) as store:
        shared = Shared(store, "bot", _template(clock))
        _commits(shared, clock, ["a", "b", "c"])
        with sqlite3.connect(path) as conn:
            record = json.loads(conn.execute("SELECT record FROM log WHERE version = 2").fetchone()[0])
            record["prev"] = "0" * 16
            conn.execute("UPDATE log SET record = ? WHERE version = 2", (json.dumps(record),))
        conn.close()
        with pytest.raises(StoreError, match="log record 2 was not made on version 1"):
            shared.at(3)


def test_records_and_heads_without_tips_are_still_read(tmp_path: Path, clock: ManualClock) -> None:
    """A store written before versions carried tips (three-field heads, no ``prev``) opens and goes on."""
    path = tmp_path / "store.db"
    with SQLiteStore(path) as store:
        shared = Shared(store, "bot", _template(clock))
        _commits(shared, clock, ["a", "b"])
    with sqlite3.connect(path) as conn:
        for table in ("log", "checkpoints"):
            for version, head in conn.execute(f"SELECT version, head FROM {table}").fetchall():
                old = json.dumps(json.loads(head)[:3])
                conn.execute(f"UPDATE {table} SET head = ? WHERE version = ?", (old, version))
        for version, text in conn.execute("SELECT version, record FROM log").fetchall():
            record = json.loads(text)
            del record["prev"]
            record["head"] = record["head"][:3]
            conn.execute("UPDATE log SET record = ? WHERE version = ?", (json.dumps(record), version))
    conn.close()
    with SQLiteStore(path) as store:
        old = Shared(store, "bot", _template(clock))
        assert sorted(old.current().keys()) == ["a", "b"]
        assert sorted(old.at(1).keys()) == ["a"]
        _commits(old, clock, ["c"])
        assert Shared(store, "bot", _template(clock)).current() == old.current()


def test_wait_tells_a_follower_the_store_went_back(tmp_path: Path, clock: ManualClock) -> None:
    path, backup = tmp_path / "store.db", tmp_path / "backup.db"
    with SQLiteStore(path) as store:
        follower = Shared(store, "bot", _template(clock))
        _commits(follower, clock, ["a"])
        _copy(path, backup)
        _commits(follower, clock, ["b", "c"])
        _copy(backup, path)
        with pytest.raises(StoreError, match="went back: this replica saw version 3"):
            follower.wait(timeout=5)
        assert follower.version == 1
        assert follower.wait(timeout=0) is False


def test_a_redis_store_restored_from_a_backup_is_noticed(redis_url: str, redis_prefix: str, clock: ManualClock) -> None:
    """A real server: the memory's keys saved with DUMP at version 2 and put back with RESTORE
    after version 4 (a restored backup); the writer that saw 4 is told once and goes on."""
    import redis

    from lethe.store import RedisStore

    admin = redis.Redis.from_url(redis_url)
    with RedisStore(redis_url, prefix=redis_prefix) as store:
        writer = Shared(store, "bot", _template(clock))
        follower = Shared(store, "bot", _template(clock))
        _commits(writer, clock, ["a", "b"])
        keys = admin.keys(f"{redis_prefix}:*")
        saved = {key: admin.dump(key) for key in keys}
        _commits(writer, clock, ["c", "d"])
        assert follower.wait(timeout=5) is True
        assert follower.version == 4
        for key in admin.keys(f"{redis_prefix}:*"):
            if key not in saved:
                admin.delete(key)
        for key, value in saved.items():
            admin.restore(key, 0, value, replace=True)

        with pytest.raises(StoreError, match="went back: this replica saw version 4"):
            writer.update(lambda m: m.put("e", key="e"))
        writer.update(lambda m: m.put("e", key="e"))
        assert writer.version == 3
        with pytest.raises(StoreError, match="went back"):
            follower.current()  # it saw versions 3 and 4 of a history the store no longer holds
        assert follower.current() == writer.current()
        assert sorted(Shared(store, "bot", _template(clock)).current().keys()) == ["a", "b", "e"]
    admin.close()
