"""``lethe inspect`` on an SQLite store this process cannot write: a file without write permission,
a directory without it (SQLite cannot make its ``-wal`` and ``-shm`` files there), a read-only
volume.  inspect opens the store with ``SQLiteStore(path, read_only=True)``: it shows what it
shows of a writable copy, and the file and its directory are left as they were.  As in
``tests/test_store_readonly.py``: run by the user ``nobody`` when the tests run as root (whom
permissions do not stop), and in a mount namespace of its own for the volume."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from lethe import ManualClock
from lethe.store import Shared, SQLiteStore

from .test_cli import AT, T0, expect_error, run
from .test_cli_store import fill, template
from .test_store_readonly import ENV, _other_user, _read_only_mount

NAME = "agent-memory.db"


def _made(path: Path) -> None:
    """A closed store at ``path`` holding 'support-bot' at version 5 (no -wal or -shm left)."""
    clock = ManualClock(T0)
    with SQLiteStore(path) as store:
        fill(Shared(store, "support-bot", template(clock)), clock)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _shown(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "file"}


def _expected(tmp_path: Path, path: Path) -> dict[str, Any]:
    """What inspect shows of a writable copy of ``path``."""
    twin = tmp_path / "twin" / NAME
    twin.parent.mkdir()
    shutil.copy(path, twin)
    result = run("inspect", str(twin), "--at", AT, "--json")
    assert result.returncode == 0, result.stderr
    return _shown(json.loads(result.stdout))


def _inspect(path: Path, *, user: tuple[int, str] | None = None, prefix: list[str] | None = None) -> Any:
    """``python -m lethe inspect PATH --at AT --json`` in another process: as ``user`` (a user id
    and the Python it runs), or under the command ``prefix``."""
    python = sys.executable if user is None else user[1]
    return subprocess.run(
        [*(prefix or []), python, "-m", "lethe", "inspect", str(path), "--at", AT, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        cwd="/",
        user=None if user is None else user[0],
        group=None if user is None else user[0],
        extra_groups=None if user is None else [],
        check=False,
    )


def _shows_the_store(result: Any, expected: dict[str, Any], path: Path) -> None:
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    doc = json.loads(result.stdout)
    assert doc["file"] == str(path)
    assert (doc["name"], doc["version"]) == ("support-bot", 5)
    assert _shown(doc) == expected


def test_a_file_without_write_permission_is_inspected(shared_dir: Path, tmp_path: Path) -> None:
    path = shared_dir / NAME
    _made(path)
    expected = _expected(tmp_path, path)
    shared_dir.chmod(0o777)  # the directory is writable: SQLite makes its -shm there to read
    path.chmod(0o444)
    before = _digest(path)
    _shows_the_store(_inspect(path, user=_other_user()), expected, path)
    assert _digest(path) == before


def test_a_store_in_a_directory_without_write_permission_is_inspected(shared_dir: Path, tmp_path: Path) -> None:
    # The file is writable, but its -wal and -shm cannot be made beside it: read as immutable
    # (there is no write-ahead log), and nothing appears in the directory.
    path = shared_dir / NAME
    _made(path)
    expected = _expected(tmp_path, path)
    path.chmod(0o666)
    shared_dir.chmod(0o555)
    before = _digest(path)
    _shows_the_store(_inspect(path, user=_other_user()), expected, path)
    assert _digest(path) == before
    assert sorted(p.name for p in shared_dir.iterdir()) == [NAME, f"{NAME}-lethe-lock"]


def test_a_store_on_a_read_only_volume_is_inspected(tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    path = volume / NAME
    _made(path)
    expected = _expected(tmp_path, path)
    before = _digest(path)
    _shows_the_store(_inspect(path, prefix=_read_only_mount(volume)), expected, path)
    assert _digest(path) == before
    assert sorted(p.name for p in volume.iterdir()) == [NAME, f"{NAME}-lethe-lock"]


def test_a_write_ahead_log_without_its_shm_on_a_read_only_volume_is_one_line(tmp_path: Path) -> None:
    # A copy taken while a writer had the file open, without its -shm: read as immutable, SQLite
    # would show the store without the commits the -wal holds; the store refuses, inspect says why.
    live, copy = tmp_path / "live", tmp_path / "copy"
    live.mkdir()
    copy.mkdir()
    clock = ManualClock(T0)
    with SQLiteStore(live / NAME) as store:
        store._connection().execute("PRAGMA wal_autocheckpoint = 0")  # the commits stay in the -wal
        fill(Shared(store, "support-bot", template(clock)), clock)
        for name in (NAME, f"{NAME}-wal"):
            shutil.copy(live / name, copy / name)
    files = {p.name: _digest(p) for p in copy.iterdir()}
    result = _inspect(copy / NAME, prefix=_read_only_mount(copy))
    expect_error(result, str(copy / NAME), "holds commits that are not in the file yet")
    assert {p.name: _digest(p) for p in copy.iterdir()} == files
