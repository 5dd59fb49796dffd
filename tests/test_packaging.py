"""Packaging: the distribution name, the install instructions, and how CI finds its interpreters."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import lethe

ROOT = Path(__file__).resolve().parent.parent
DIST = "lethe-decay"  # `lethe` on PyPI is an unrelated project; the import name stays `lethe`.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FIND_PYTHON = ROOT / ".ci" / "find-python"


def test_distribution_name_and_version() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^name = "lethe-decay"$', pyproject, flags=re.M)
    assert re.search(r'^lethe = "lethe._cli:main"$', pyproject, flags=re.M)  # the console script keeps its name
    assert importlib.metadata.version(DIST) == lethe.__version__


def test_every_pip_install_names_the_distribution_or_the_checkout() -> None:
    """``pip install`` either installs this checkout (``.``, ``-e '.[extra]'``) or names ``lethe-decay``."""
    found = 0
    for page in PAGES:
        for lineno, line in enumerate(page.read_text().splitlines(), start=1):
            for match in re.finditer(r"pip install((?:\s+-[-\w]+)*)\s+(\S+)", line):
                target = match.group(2).strip("`'\"")
                found += 1
                assert target.startswith((".", f"{DIST}[")) or target in {DIST, "mutmut"}, (
                    f"{page.name}:{lineno}: {line.strip()}"
                )
    assert found >= 3


def test_the_docs_tell_users_to_install_lethe_decay() -> None:
    for page in (ROOT / "README.md", ROOT / "docs" / "index.md"):
        assert f"pip install {DIST}" in page.read_text(), page.name


def test_benchmarks_record_the_version_of_the_lethe_they_measure() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import suite  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert suite.machine_info()["versions"]["lethe"] == lethe.__version__


# -- .ci/find-python: which interpreters CI runs the suite on ----------------------------


def find_python(version: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(FIND_PYTHON), version], capture_output=True, text=True, env=env, timeout=60)


def this_version() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def base_env(tmp_path: Path, path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYENV_ROOT", "PATH", "HOME"}}
    env.update(PYENV_ROOT=str(tmp_path / "pyenv"), HOME=str(tmp_path / "home"), PATH=path)
    return env


@pytest.mark.skipif(sys.platform == "win32", reason="CI runs on a POSIX shell")
def test_find_python_in_a_pyenv_directory_without_pyenv(tmp_path: Path) -> None:
    # Only the versions directory exists: no pyenv command, no shims on PATH.
    version = this_version()
    for patch in ("0", "9"):
        bin_dir = tmp_path / "pyenv" / "versions" / f"{version}.{patch}" / "bin"
        bin_dir.mkdir(parents=True)
        (bin_dir / "python").symlink_to(sys.executable)
    result = find_python(version, base_env(tmp_path, "/usr/bin:/bin"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tmp_path / "pyenv" / "versions" / f"{version}.9" / "bin" / "python")


@pytest.mark.skipif(sys.platform == "win32", reason="CI runs on a POSIX shell")
def test_find_python_on_path(tmp_path: Path) -> None:
    version = this_version()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / f"python{version}").symlink_to(sys.executable)
    result = find_python(version, base_env(tmp_path, f"{bin_dir}:/usr/bin:/bin"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(bin_dir / f"python{version}")


@pytest.mark.skipif(sys.platform == "win32", reason="CI runs on a POSIX shell")
def test_find_python_refuses_an_interpreter_of_another_version(tmp_path: Path) -> None:
    # A directory named for 3.99 whose python is really this one is not 3.99; nothing is printed.
    bin_dir = tmp_path / "pyenv" / "versions" / "3.99.1" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python3.99").symlink_to(sys.executable)
    result = find_python("3.99", base_env(tmp_path, f"{tmp_path / 'bin'}:/usr/bin:/bin"))
    assert result.returncode == 1
    assert result.stdout == ""


def test_ci_runs_the_suite_on_every_supported_python() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    for version in ("3.10", "3.11", "3.12", "3.13"):
        assert version in script
    classifiers = re.findall(r"Programming Language :: Python :: (3\.\d+)", (ROOT / "pyproject.toml").read_text())
    assert classifiers == ["3.10", "3.11", "3.12", "3.13"]
    assert "find-python" in script
    check = subprocess.run(["bash", "-n", str(ROOT / ".ci" / "run")], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
