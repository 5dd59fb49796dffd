"""Every ```python block of README.md and docs/*.md passes ``mypy --strict`` as written.

Each page becomes one module, as tests/test_docs.py and tests/test_docs_pages.py
run it (a page's blocks share one namespace): the page's text with every line
outside its Python blocks blanked, so mypy's line numbers are the page's.
One mypy run checks every page, and the recipes in examples/ that
docs/recipes.md quotes (tests/test_docs_recipes.py checks the quotes).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)


def as_module(text: str) -> str:
    """``text`` with everything but its Python blocks replaced by blank lines (same line numbers)."""
    lines = [""] * (text.count("\n") + 1)
    for match in FENCE.finditer(text):
        first = text.count("\n", 0, match.start(1))
        for i, line in enumerate(match.group(1).splitlines()):
            lines[first + i] = line
    return "\n".join(lines) + "\n"


def test_as_module_keeps_line_numbers() -> None:
    page = "# Title\n\ntext\n```python\nx: int = 1\n```\nmore\n```sh\nls\n```\n```python\ny = x\n```\n"
    module = as_module(page).splitlines()
    assert module[4] == "x: int = 1"
    assert module[11] == "y = x"
    assert [line for line in module if line] == ["x: int = 1", "y = x"]


def test_doc_blocks_pass_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    modules: dict[str, Path] = {}
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        if not FENCE.search(text):
            continue
        module = tmp_path / f"doc_{page.stem.replace('-', '_').lower()}.py"
        module.write_text(as_module(text), encoding="utf-8")
        modules[str(module)] = page
    assert len(modules) >= 2
    # In a process of its own: mypy's analysis of the pages and of what they import (LangGraph,
    # pydantic) stays in memory after an in-process run, millions of objects, and every later
    # gc.collect() in the suite pays for them (a benchmark's smoke test took minutes).
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--strict",
            "--cache-dir",
            str(tmp_path / ".mypy_cache"),
            "--no-error-summary",
            "--show-error-codes",
            *modules,
            *(str(p) for p in sorted((ROOT / "examples").glob("*.py"))),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    stdout, stderr, status = run.stdout, run.stderr, run.returncode
    problems = []
    for line in stdout.splitlines():
        path, sep, rest = line.partition(":")
        page = modules.get(path)
        problems.append(f"{page.relative_to(ROOT)}:{rest}" if sep and page is not None else line)
    assert not problems, "\n".join(problems) + stderr
    assert status == 0, stderr
