"""Exit codes of the CLI (DESIGN.md contract)."""

from __future__ import annotations

PASS = 0
FAIL = 1
USAGE = 2
BLOCKED = 3
DETACHED = 4  # Ctrl-C on an attached `run`/`attach`/`demo`/`replay`: the console left, the run goes on
CANCELLED = 130

_BY_VERDICT = {"Pass": PASS, "Fail": FAIL, "Blocked": BLOCKED, "Cancelled": CANCELLED}


def for_verdict(verdict: str | None) -> int:
    """Exit code for a run/triage verdict. Incomplete or unknown counts as Fail."""
    return _BY_VERDICT.get(verdict or "", FAIL)
