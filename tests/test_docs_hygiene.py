"""The docs cite only public sources, list every decay name, and keep the changelog in shape."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lethe import Entry, Memory
from lethe.decay import BUILTINS

ROOT = Path(__file__).resolve().parent.parent
TEXTS = sorted(
    [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "docs").glob("*.py"),
        *(ROOT / "src").rglob("*.py"),
        *(ROOT / "examples").glob("*.py"),
        *(ROOT / "benchmarks").glob("*.py"),
        # The tests too (this file spells the pattern out, so not this one).
        *(path for path in (ROOT / "tests").rglob("*.py") if path.name != Path(__file__).name),
    ]
)
# References to documents a reader cannot see.
UNSEEN = re.compile(
    r"\bseeds? ?\d+|\bthe seed\b|seed's|design spec|\bthe spec\b|\bADR-?\d+|\bthe issue\b|issue's|\bEC-\d+\b",
    flags=re.I,
)


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_only_public_sources(path: Path) -> None:
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        assert not UNSEEN.search(line), f"{path.relative_to(ROOT)}:{lineno}: {line.strip()}"


def test_memory_docstring_lists_every_decay_name() -> None:
    doc = Memory.__doc__ or ""
    args = doc[doc.index("decay_fn:") : doc.index("half_life:")]
    for name in BUILTINS:
        assert f'"{name}"' in args, name


def test_docstrings_say_immutability_is_shallow() -> None:
    for cls in (Memory, Entry):
        assert "shallow" in (cls.__doc__ or ""), cls.__name__
    assert "shallow" in (ROOT / "docs" / "concepts.md").read_text()


KINDS = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")


def test_changelog_has_one_section_per_kind_per_release() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    releases = re.split(r"^## ", text, flags=re.M)[1:]
    assert releases
    for release in releases:
        title = release.splitlines()[0]
        kinds = re.findall(r"^### (.+)$", release, flags=re.M)
        assert kinds, title
        assert len(kinds) == len(set(kinds)), f"{title}: {kinds}"
        assert all(k in KINDS for k in kinds), f"{title}: {kinds}"
        assert kinds == sorted(kinds, key=KINDS.index), f"{title}: {kinds}"
