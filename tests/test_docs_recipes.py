"""docs/recipes.md quotes examples/: each excerpt is in its file and each printed output is what the file prints.

The excerpts are ```py blocks (shortened: a line ``...`` marks a cut); the full
files are type-checked by tests/test_docs_types.py and run by tests/test_examples.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RECIPES = (ROOT / "docs" / "recipes.md").read_text(encoding="utf-8")
SECTIONS = re.findall(r"^## [^\n]*`(\w+)\.py`\n(.*?)(?=^## |\Z)", RECIPES, flags=re.S | re.M)


def fenced(text: str, lang: str) -> list[list[str]]:
    return [block.splitlines() for block in re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.S | re.M)]


def test_every_example_has_a_section() -> None:
    assert sorted(name for name, _ in SECTIONS) == sorted(p.stem for p in (ROOT / "examples").glob("*.py"))


@pytest.mark.parametrize(("name", "section"), SECTIONS, ids=[name for name, _ in SECTIONS])
def test_excerpts_are_quoted_from_the_example(name: str, section: str) -> None:
    source = [line.strip() for line in (ROOT / "examples" / f"{name}.py").read_text(encoding="utf-8").splitlines()]
    for block in fenced(section, "py"):
        at = 0
        for line in block:
            quoted = line.strip()
            if quoted in ("", "..."):
                continue
            # In order: each quoted line is a line of the file, after the previous one.
            assert quoted in source[at:], f"docs/recipes.md, {name}.py: {quoted!r} is not in the file (in order)"
            at = source.index(quoted, at) + 1


@pytest.mark.parametrize(("name", "section"), SECTIONS, ids=[name for name, _ in SECTIONS])
def test_printed_output_is_what_the_example_prints(name: str, section: str) -> None:
    blocks = fenced(section, "text")
    assert blocks, name
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / f"{name}.py")], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    for block in blocks:
        for line in block:
            if line.strip() not in ("", "..."):
                assert line.rstrip() in (o.rstrip() for o in out), f"docs/recipes.md, {name}.py prints no {line!r}"
