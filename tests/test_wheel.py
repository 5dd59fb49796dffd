"""The built wheel installs into a clean virtual environment and works there."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_installs_and_runs_in_a_clean_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(ROOT)],
        check=True,
    )
    (wheel,) = dist.glob("lethe_decay-*.whl")  # the distribution is lethe-decay
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
