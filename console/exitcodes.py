"""Exit codes of the CLI (DESIGN.md contract)."""

from __future__ import annotations

PASS = 0
FAIL = 1
USAGE = 2
BLOCKED = 3
CANCELLED = 130

_BY_VERDICT = {"Pass": PASS, "Fail": FAIL, "Blocked": BLOCKED, "Cancelled": CANCELLED}


def for_verdict(verdict: str | None) -> int:
    """Exit code for a run/triage verdict. Incomplete or unknown counts as Fail."""
    return _BY_VERDICT.get(verdict or "", FAIL)
