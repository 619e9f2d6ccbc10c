"""Shared by the triage tests on real fixtures: where the fixtures are, and short ways to triage one."""

from __future__ import annotations

import json
from functools import cache
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


def assert_primary(res: dict, verdict: str, cls: str | None, rule: str | None = None) -> None:
    """The primary finding has this verdict and class (and this rule id, when one is given)."""
    got = primary(res)
    assert got[:2] == (verdict, cls), got
    if rule is not None:
        assert got[2] == rule, got


def assert_no_finding(res: dict) -> None:
    """No primary finding, and a verdict that blames nothing (a near miss of a rule must not fire)."""
    verdict, cls, _ = primary(res)
    assert cls is None and verdict in ("Incomplete", "Pass"), (verdict, cls)


@cache
def _corpus_cases() -> dict[str, dict]:
    """Every case of ``tests/corpus/*.jsonl`` by id, read once per test session."""
    cases: dict[str, dict] = {}
    for path in sorted((Path(__file__).parent / "corpus").glob("cases-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                case = json.loads(line)
                cases.setdefault(case["id"], case)
    return cases


def tuning_case(case_id: str) -> str:
    """The log excerpt of a tuning-split case of ``tests/corpus/*.jsonl`` (never a held-out one)."""
    case = _corpus_cases()[case_id]
    assert case["split"] == "tuning", f"{case_id} is held out"
    return case["log_excerpt"]
