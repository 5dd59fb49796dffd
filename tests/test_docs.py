"""The README's code runs, its two commands are the ones CI runs, and the demo works."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_readme_python_blocks_run() -> None:
    for code in blocks("python"):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})


def test_readme_has_exactly_two_commands_and_ci_runs_the_test_one() -> None:
    commands = [b.strip() for b in blocks("sh")]
    assert len(commands) == 2
    assert "python -m lethe" in commands[0]
    assert "pytest" in commands[1]
    assert commands[1] in (ROOT / ".ci" / "run").read_text()


def test_demo_runs() -> None:
    out = subprocess.run([sys.executable, "-m", "lethe"], capture_output=True, text=True, check=True).stdout
    assert "evicted 'spike'" in out
    assert "pinned" in out
    out2 = subprocess.run([sys.executable, "-m", "lethe", "demo"], capture_output=True, text=True, check=True).stdout
    assert out2 == out
