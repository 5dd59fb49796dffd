"""The command line when its output cannot be written, or it is interrupted: an exit status
and at most one line on stderr, never a traceback (``lethe ... | head``, a full disk, Ctrl-C)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

LETHE = [sys.executable, "-m", "lethe"]


def _stopped_reading(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    """``lethe ARGS`` whose reader goes away at once, as ``| head -0`` does."""
    proc = subprocess.Popen([*LETHE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    return subprocess.CompletedProcess(args, proc.wait(timeout=60), b"", err)


@pytest.mark.parametrize("command", [["demo"], ["curves"]])
def test_a_reader_that_goes_away_stops_it_quietly(command: list[str]) -> None:
    done = _stopped_reading(command)
    assert (done.returncode, done.stderr) == (141, b"")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", [["demo"], ["curves"]])
def test_a_full_disk_is_one_line(command: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        done = subprocess.run([*LETHE, *command], stdout=full, stderr=subprocess.PIPE, timeout=60, check=False)
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [f"lethe {command[0]}: error: [Errno 28] No space left on device"]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_ctrl_c_ends_it_with_status_130_and_no_traceback(tmp_path: Path) -> None:
    log = tmp_path / "ops.jsonl"
    log.write_text("".join(json.dumps({"t": i, "op": "put", "value": i}) + "\n" for i in range(300_000)))
    proc = subprocess.Popen(
        [*LETHE, "simulate", str(log), "--capacity", "1000"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    time.sleep(1.0)  # (under way: the replay of 300,000 lines takes longer)
    proc.send_signal(signal.SIGINT)
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert (proc.wait(timeout=60), err) == (130, b"")
