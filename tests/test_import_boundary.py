"""Only console/tui imports Textual: checked by walking every module's AST and by import-linter."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "console"
FORBIDDEN = ("textual", "textual_plotext")


def textual_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    hits = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names = [str(node.args[0].value)]
        hits += [
            f"{path.relative_to(path.parents[2]) if len(path.parents) > 2 else path}:{node.lineno} {n}"
            for n in names
            if n.split(".")[0] in FORBIDDEN
        ]
    return hits


def core_modules() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if "tui" not in p.relative_to(PACKAGE).parts]


def test_no_textual_outside_tui() -> None:
    found = [hit for path in core_modules() for hit in textual_imports(path)]
    assert not found, "Textual imported outside console/tui: " + ", ".join(found)


def test_checker_catches_a_planted_import(tmp_path: Path) -> None:
    bad = tmp_path / "pkg" / "sub" / "mod.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("import os\nfrom textual.app import App\nimportlib.import_module('textual_plotext')\n")
    assert len(textual_imports(bad)) == 2


def test_core_imports_without_textual() -> None:
    """Importing the headless core in a fresh interpreter must not load Textual."""
    mods = [
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in core_modules()
        if p.name != "__main__.py" and "demo" not in p.parts
    ]
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}:\n"
        "    try: importlib.import_module(m)\n"
        "    except ImportError: pass\n"
        "print(sorted(k for k in sys.modules if k.split('.')[0] in ('textual', 'textual_plotext')))\n"
    )
    out = (
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, check=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    assert out == "[]"


def lint_imports() -> str:
    return shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")


needs_import_linter = pytest.mark.skipif(
    not Path(lint_imports()).exists(), reason="import-linter not installed"
)


@needs_import_linter
def test_import_linter_contracts_hold() -> None:
    """pyproject's contracts (layers, core without the views, Textual only in the TUI) all kept."""
    names = [
        c["name"]
        for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    ]
    assert any("Layers" in n for n in names)
    proc = subprocess.run(
        [lint_imports(), "--no-cache"], capture_output=True, text=True, cwd=ROOT, timeout=180
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.stdout.count(" KEPT") == len(names)


@needs_import_linter
def test_layers_contract_catches_an_upward_import(tmp_path: Path) -> None:
    """The report (a core layer) importing the CLI breaks both the layers and the views contract."""
    shutil.copytree(PACKAGE, tmp_path / "console", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    report = tmp_path / "console" / "report.py"
    report.write_text(
        report.read_text() + "\n\ndef _planted() -> None:\n    from console.cli import main  # noqa\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [lint_imports(), "--no-cache"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=180
    )
    assert proc.returncode != 0
    assert "console.report -> console.cli" in proc.stdout.replace("\n", " ") or "console.cli" in proc.stdout
    assert proc.stdout.count(" BROKEN") == 2


def test_no_string_imports_of_the_console() -> None:
    """Every edge between console modules is a plain import statement (import-linter and the type
    checker see it); only the demo loads a Bridge provider module by name."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if "demo" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module",
                "__import__",
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, "string imports: " + ", ".join(found)
