"""An SQLite store that cannot be written is read: ``SQLiteStore(path, read_only=True)``, and a file
this process cannot write, found so by the operating system itself (these tests run as root, whom
file permissions do not stop): a file and a directory without write permission, read by a process
running as the user ``nobody``; a read-only volume, a read-only bind mount in a mount namespace of
its own (``unshare -m``), with and without a writer at work on the same file through a writable
path.  Every read works; every write raises ``StoreError`` saying the store is read-only, and
nothing is written."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import lethe
from lethe import Memory
from lethe.store import Shared, SQLiteStore, StoreError

from ._support import fake_clock

NOBODY = 65534
#: What a reader in another process does (argv: the file, and "wait" to wait for a commit after
#: reading): its findings as one JSON line, "ready" first when it waits.
READER = """
import json, sys
from lethe import Memory
from lethe.store import Shared, SQLiteStore, StoreError

def attempt(call):
    try:
        call()
    except StoreError as exc:
        return str(exc)
    return None

try:
    store = SQLiteStore(sys.argv[1])
except StoreError as exc:
    print(json.dumps({"refused": str(exc)}))
    sys.exit(0)
shared = Shared(store, "m", Memory(max_entries=3), max_clock_skew=None)
found = {
    "read_only": store.read_only,
    "version": shared.version,
    "keys": sorted(shared.current().keys()),
    "at": sorted(shared.at(2).keys()),
    "evictions": [v for v, _ in shared.evictions(0)],
    "writes": [
        attempt(lambda: shared.update(lambda m: m.put("x", key="x"))),
        attempt(lambda: shared.configure(max_entries=5)),
        attempt(lambda: Shared(store, "new", Memory())),
        attempt(lambda: store.drop("m")),
        attempt(lambda: store.compact("m", 0)),
    ],
}
if sys.argv[2:] == ["wait"]:
    print("ready", flush=True)
    found["moved"] = shared.wait(timeout=30)
    found["after"] = [shared.version, sorted(map(repr, shared.current().keys()))]
print(json.dumps(found))
"""


def _template() -> Memory[Any, Any]:
    return Memory(max_entries=3, clock_fn=fake_clock())


def _made(path: Path, commits: int = 5) -> SQLiteStore:
    """A store at ``path`` holding "m": ``commits`` puts into 3 places, so the last two evicted."""
    store = SQLiteStore(path)
    shared = Shared(store, "m", _template())
    for i in range(commits):
        shared.update(lambda m, i=i: m.put(i, key=i))
    return store


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read_as_expected(found: dict[str, Any], why: str) -> None:
    assert found["read_only"] is True
    assert found["version"] == 5
    assert found["keys"] == [2, 3, 4]
    assert found["at"] == [0, 1]
    assert found["evictions"] == [4, 5]
    for refusal in found["writes"]:
        assert refusal is not None
        assert f"the store is read-only ({why}); nothing was written" in refusal


# -- read_only=True ----------------------------------------------------------------------------


def test_read_only_reads_and_refuses_every_write(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _made(path).close()
    before = _digest(path)
    with SQLiteStore(path, read_only=True) as store:
        assert store.read_only
        assert "read_only=True" in repr(store)
        shared: Shared[Any, Any] = Shared(store, "m", _template(), max_clock_skew=None)
        assert shared.version == 5
        assert sorted(shared.current().keys()) == [2, 3, 4]
        assert sorted(shared.at(2).keys()) == [0, 1]
        assert [v for v, _ in shared.evictions(0)] == [4, 5]
        refused = r"store\.db: the store is read-only \(opened with read_only=True\); nothing was written"
        with pytest.raises(StoreError, match=refused):
            shared.update(lambda m: m.put("x", key="x"))
        with pytest.raises(StoreError, match=refused):
            shared.configure(max_entries=5)
        with pytest.raises(StoreError, match=refused):
            Shared(store, "new", Memory())
        with pytest.raises(StoreError, match=refused):
            store.drop("m")
        with pytest.raises(StoreError, match=refused):
            store.compact("m", 0)
        assert store.names() == ["m"]
        assert shared.version == 5
    assert _digest(path) == before
    with SQLiteStore(path) as store:  # and writable again, as ever
        assert not store.read_only
        assert Shared(store, "m", _template()).update(lambda m: m.put("x", key="x")).peek("x").value == "x"


def test_read_only_follows_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with _made(path) as writer_store, SQLiteStore(path, read_only=True) as store:
        reader: Shared[Any, Any] = Shared(store, "m", _template(), max_clock_skew=None)
        writer: Shared[Any, Any] = Shared(writer_store, "m", _template())
        writer.update(lambda m: m.put("new", key="new"))
        assert reader.wait(timeout=5)
        assert reader.current().peek("new").value == "new"


def test_read_only_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot open the database file"):
        SQLiteStore(tmp_path / "absent.db", read_only=True)
    assert list(tmp_path.iterdir()) == []
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(StoreError, match=r"not a lethe store \(an SQLite database without tables, read-only\)"):
        SQLiteStore(empty, read_only=True)
    assert empty.stat().st_size == 0


def test_read_only_is_a_flag(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="read_only"):
        SQLiteStore(tmp_path / "store.db", read_only="yes")  # type: ignore[arg-type]


# -- a file or directory without write permission, read by another user ----------------------




#: Where ``lethe`` is imported from, for a reader in another process.
ENV = {**os.environ, "PYTHONPATH": str(Path(lethe.__file__).parent.parent)}


def _run_reader(
    path: Path, *args: str, prefix: list[str] | None = None, user: tuple[int, str] | None = None
) -> Any:
    """The reader script on ``path`` in another process: under the command ``prefix``, or as
    ``user`` (a user id and the Python it runs)."""
    python = sys.executable if user is None else user[1]
    done = subprocess.run(
        [*(prefix or []), python, "-c", READER, str(path), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        user=None if user is None else user[0],
        group=None if user is None else user[0],
        extra_groups=None if user is None else [],
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _other_user() -> tuple[int, str] | None:
    """The user to read as, and the Python it runs: ``nobody`` when these tests run as root
    (whom permissions do not stop), else None (this user); skip where ``nobody`` can run
    neither this Python nor the system's ``python3`` (a virtual environment under a home
    directory it cannot enter, say) with lethe."""
    if os.geteuid() != 0:
        return None
    tried = []
    for python in dict.fromkeys((sys.executable, shutil.which("python3", path="/usr/bin:/bin"))):
        if python is None:
            continue
        try:
            probe = subprocess.run(
                [python, "-c", "import lethe.store"],
                user=NOBODY,
                group=NOBODY,
                extra_groups=[],
                capture_output=True,
                text=True,
                env=ENV,
                check=False,
            )
        except OSError as exc:
            tried.append(f"{python}: {exc}")
            continue
        if probe.returncode == 0:
            return NOBODY, python
        tried.append(f"{python}: {probe.stderr[-200:]}")
    pytest.skip(f"the user nobody cannot run Python with lethe: {tried}")


def test_a_file_without_write_permission_is_read(shared_dir: Path) -> None:
    path = shared_dir / "store.db"
    _made(path).close()
    shared_dir.chmod(0o777)  # the directory is writable: SQLite makes its -shm there to read
    path.chmod(0o444)
    before = _digest(path)
    found = _run_reader(path, user=_other_user())
    _read_as_expected(found, "this process cannot write the file")
    assert _digest(path) == before


def test_a_directory_without_write_permission_is_read(shared_dir: Path) -> None:
    # The file is writable, but SQLite writes (and, in WAL mode, reads) through -wal and -shm files
    # beside it, which cannot be made: it is read as immutable (there is no write-ahead log).
    path = shared_dir / "store.db"
    _made(path).close()
    assert sorted(p.name for p in shared_dir.iterdir()) == ["store.db", "store.db-lethe-lock"]
    path.chmod(0o666)
    shared_dir.chmod(0o555)
    before = _digest(path)
    found = _run_reader(path, user=_other_user())
    _read_as_expected(found, "this process cannot write the file")
    assert _digest(path) == before
    assert sorted(p.name for p in shared_dir.iterdir()) == ["store.db", "store.db-lethe-lock"]


# -- a read-only volume ------------------------------------------------------------------------


def _read_only_mount(directory: Path) -> list[str]:
    """The command prefix that runs a command with ``directory`` mounted read-only over itself,
    in a mount namespace of its own (nothing changes for any other process); skip where that
    cannot be done."""
    unshare = shutil.which("unshare")
    if unshare is None or shutil.which("mount") is None:
        pytest.skip("no unshare or mount command")
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    prefix = [unshare, "--mount", "sh", "-c", script, str(directory)]
    probe = subprocess.run([*prefix, "sh", "-c", f'! touch "{directory}/probe"'], capture_output=True, check=False)
    if probe.returncode != 0 or (directory / "probe").exists():
        pytest.skip(f"cannot mount {directory} read-only in a mount namespace: {probe.stderr[-200:]!r}")
    return prefix


def test_a_store_on_a_read_only_volume_is_read(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _made(path).close()  # closed: no write-ahead log is left beside it
    prefix = _read_only_mount(tmp_path)
    found = _run_reader(path, prefix=prefix)
    _read_as_expected(found, "this process cannot write the file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.db", "store.db-lethe-lock"]


def test_a_read_only_volume_follows_a_writer_at_work_elsewhere(tmp_path: Path) -> None:
    # A writer holds the file open through a writable path: its -wal and -shm are there, and the
    # reader on the read-only volume reads through them (mode=ro), commits made after it opened too.
    path = tmp_path / "store.db"
    prefix = _read_only_mount(tmp_path)
    with _made(path) as store:
        writer: Shared[Any, Any] = Shared(store, "m", _template())
        reader = subprocess.Popen(
            [*prefix, sys.executable, "-c", READER, str(path), "wait"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        try:
            assert reader.stdout is not None
            assert reader.stdout.readline().strip() == "ready"
            writer.update(lambda m: m.put("late", key="late"))
            out, err = reader.communicate(timeout=60)
        finally:
            reader.kill()
        assert reader.returncode == 0, err
        found = json.loads(out.splitlines()[-1])
    _read_as_expected(found, "this process cannot write the file")
    assert found["moved"] is True
    assert found["after"] == [6, ["'late'", "3", "4"]]


def test_a_write_ahead_log_without_its_shm_on_a_read_only_volume_is_refused(tmp_path: Path) -> None:
    # A copy taken while a writer had the file open, without its -shm: SQLite could read the file
    # on a read-only volume only as immutable, without the commits the -wal holds.
    live, copy = tmp_path / "live", tmp_path / "copy"
    live.mkdir()
    copy.mkdir()
    with _made(live / "store.db") as store:
        store._connection().execute("PRAGMA wal_autocheckpoint = 0")  # the last commit stays in the -wal
        Shared(store, "m", _template()).update(lambda m: m.put("in the log", key="logged"))
        for name in ("store.db", "store.db-wal"):
            shutil.copy(live / name, copy / name)
    found = _run_reader(copy / "store.db", prefix=_read_only_mount(copy))
    assert "store.db-wal) holds commits that are not in the file yet" in found["refused"]
    assert "-shm file it cannot make in this directory" in found["refused"]
    with SQLiteStore(copy / "store.db") as store:  # where it is writable, the log is read
        assert Shared(store, "m", _template()).current().peek("logged").value == "in the log"
