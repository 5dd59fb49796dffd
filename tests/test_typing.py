"""What the type checker accepts and refuses in code that uses lethe (``mypy --strict``).

Like immutables' ``check-immu.test``: snippets go through mypy, and the errors
it reports are compared with the ones marked ``# E`` on their lines.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

SNIPPET = textwrap.dedent(
    """
    from collections.abc import Hashable
    from typing import Any

    from lethe import Memory

    named: Memory[str, str] = Memory()
    named = named.put("x", key="k")
    named = named.put("y")  # E: an auto key is an int, and this memory's keys are str
    numbered: Memory[int, str] = Memory()
    numbered = numbered.put("y")
    mixed: Memory[int | str, str] = Memory()
    mixed = mixed.put("y").put("z", key="k")
    loose: Memory[Any, str] = Memory()
    loose = loose.put("y")
    hashable: Memory[Hashable, str] = Memory()
    hashable = hashable.put("y").put("z", key=("a", 1))
    named = named.put("y", key=1)  # E: an int key in a str-keyed memory
    loaded: Memory[str, str] = Memory.from_dict(named.to_dict())
    top: list[tuple[str, float]] = [(e.value, s) for e, s in loaded.top_scored(3)]
    """
)


def test_auto_keys_and_key_types(tmp_path: Path) -> None:
    path = tmp_path / "snippet.py"
    path.write_text(SNIPPET)
    out, _, _ = mypy_api.run(["--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(path)])
    errors = {int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line}
    expected = {i for i, line in enumerate(SNIPPET.splitlines(), 1) if "# E:" in line}
    assert errors == expected, out
