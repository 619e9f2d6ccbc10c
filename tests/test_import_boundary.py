"""Only console/tui imports Textual: checked by walking every module's AST and by import-linter."""

from __future__ import annotations

import ast
import importlib.util
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


@pytest.mark.skipif(
    shutil.which("lint-imports") is None and not (Path(sys.executable).parent / "lint-imports").exists(),
    reason="import-linter not installed",
)
def test_import_linter_contract(tmp_path: Path) -> None:
    """pyproject's import-linter contract, limited to the core modules that exist right now."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    lines = [
        "[importlinter]",
        f"root_package = {conf['root_package']}",
        f"include_external_packages = {conf.get('include_external_packages', False)}",
    ]
    for i, contract in enumerate(conf["contracts"]):
        sources = [m for m in contract["source_modules"] if importlib.util.find_spec(m) is not None]
        assert sources, "no source module of the contract exists"
        lines += [
            "",
            f"[importlinter:contract:{i}]",
            f"name = {contract['name']}",
            f"type = {contract['type']}",
            "source_modules =",
            *(f"    {m}" for m in sources),
            "forbidden_modules =",
            *(f"    {m}" for m in contract["forbidden_modules"]),
            f"allow_indirect_imports = {contract.get('allow_indirect_imports', False)}",
        ]
    cfg = tmp_path / "importlinter.ini"
    cfg.write_text("\n".join(lines) + "\n")
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    proc = subprocess.run(
        [exe, "--config", str(cfg), "--no-cache"], capture_output=True, text=True, cwd=ROOT, timeout=180
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
