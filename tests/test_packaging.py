"""A wheel built from the checkout carries the package data the console reads at run time."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def test_wheel_ships_the_themes(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "console", src / "console", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path / "wheels"
    # no build isolation: the venv's setuptools builds it, so no index is needed
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(src),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (wheel,) = out.glob("rl_console-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    themes = sorted(p.name for p in (ROOT / "console" / "tui" / "theme_files").glob("*.toml"))
    assert {"dark.toml", "light.toml", "high-contrast.toml"} <= set(themes)
    assert {f"console/tui/theme_files/{t}" for t in themes} <= names
    assert "console/tui/console.tcss" in names and "console/tui/themes.py" in names
    # every non-Python file inside the package (catalog TOML/JSON, styles, sample logs) is in the wheel
    data = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "console").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc", ".md") and "__pycache__" not in p.parts
    }
    assert data, "no package data found"
    missing = sorted(d for d in data if d not in names)
    assert not missing, f"package data left out of the wheel: {missing}"
