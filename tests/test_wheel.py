"""The built wheel installs into a clean virtual environment and works there."""

from __future__ import annotations

import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_installs_and_runs_in_a_clean_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(ROOT)],
        check=True,
    )
    (wheel,) = dist.glob("lethe_decay-*.whl")  # the distribution is lethe-decay
    _long_description_links_are_absolute(wheel)
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / ("Scripts" if sys.platform == "win32" else "bin") / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)], check=True)
    check = (
        "import lethe, lethe.decay, importlib.metadata as m; "
        "assert lethe.__version__ and 'Memory' in lethe.__all__; "
        "assert m.version('lethe-decay') == lethe.__version__; "
        "import importlib.resources as r; assert r.files('lethe').joinpath('py.typed').is_file(); "
        "print(lethe.__version__)"
    )
    out = subprocess.run([str(python), "-c", check], check=True, capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.strip() == __import__("lethe").__version__
    demo = subprocess.run([str(python), "-m", "lethe"], check=True, capture_output=True, text=True, cwd=tmp_path)
    assert "evicted" in demo.stdout
    script = env / ("Scripts" if sys.platform == "win32" else "bin") / "lethe"
    command = subprocess.run([str(script), "demo"], check=True, capture_output=True, text=True, cwd=tmp_path)
    assert command.stdout == demo.stdout


def _long_description_links_are_absolute(wheel: Path) -> None:
    """PyPI shows the README from the wheel's metadata, where a relative link or image is broken."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        description = archive.read(name).decode().partition("\n\n")[2]
    targets = re.findall(r"\]\(([^)]+)\)", description)
    readme_targets = re.findall(r"\]\(([^)]+)\)", (ROOT / "README.md").read_text())
    assert len(targets) == len(readme_targets) >= 10
    for target in targets:
        assert target.startswith(("https://", "#")), target
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", description)
    assert images
    assert all(i.startswith("https://raw.githubusercontent.com/") for i in images), images
