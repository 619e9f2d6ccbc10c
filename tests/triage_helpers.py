"""Shared by the triage tests on real fixtures: where the fixtures are, and short ways to triage one."""

from __future__ import annotations

from pathlib import Path

from console.triage.scan import triage_files

REAL = Path(__file__).parent / "fixtures" / "triage" / "real"


def tri(name: str, exit_code: int | None = None) -> dict:
    """Triage of the real fixture ``real/<name>.log``."""
    return triage_files([REAL / f"{name}.log"], exit_code=exit_code)


def tri_text(tmp_path: Path, text: str, exit_code: int | None = None) -> dict:
    """Triage of ``text`` written to a log file."""
    path = tmp_path / "x.log"
    path.write_text(text)
    return triage_files([path], exit_code=exit_code)


def primary(res: dict) -> tuple[str, str | None, str | None]:
    """(verdict, primary class, primary rule)."""
    p = res["primary"] or {}
    return res["verdict"], p.get("class"), p.get("rule")
