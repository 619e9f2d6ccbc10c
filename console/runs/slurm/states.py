"""What a Slurm job state means for the run: phase, verdict and advice (data: catalog/slurm.toml)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from console.catalog.schema import SlurmCatalog, SlurmOutcome, SlurmState, load_checked


@dataclass(frozen=True)
class StateMeaning:
    phase: str  # queued | active | done | unknown
    verdict: str | None  # steps | Fail | Blocked | Cancelled | None (not done)
    advice: str | None = None
    klass: str | None = None  # the triage class when this state decides the verdict


def _catalog() -> SlurmCatalog:
    return load_checked("slurm", SlurmCatalog)


def _meaning(entry: SlurmState | SlurmOutcome, phase: str) -> StateMeaning:
    return StateMeaning(phase, entry.get("verdict"), entry.get("advice"), entry.get("class"))


def meaning(state: str) -> StateMeaning:
    entry = _catalog()["states"].get(state.upper())
    if entry is None:
        return StateMeaning(phase="unknown", verdict=None)
    return _meaning(entry, entry["phase"])


def never_runs(reason: str | None) -> bool:
    """True when a PENDING job waits for something that cannot happen (a partition limit...)."""
    if not reason:
        return False
    return any(
        reason == r or reason.startswith(r + ",") or reason.startswith(r + ":")
        for r in _catalog()["pending"]["never_runs"]
    )


def pending_advice(reason: str) -> str:
    return str(_catalog()["pending"]["advice"]).format(reason=reason)


def pending_grace_s() -> float:
    return float(_catalog()["pending"].get("grace_s", 5))


def failed_before_any_step() -> StateMeaning:
    return _meaning(_catalog()["failed_before_any_step"], "done")


def scheduler_class(class_id: str) -> dict[str, Any] | None:
    """Title/verdict/advice of a class only the scheduler shows (``node_failure``, ``scheduler_stop``)."""
    entry = (_catalog().get("classes") or {}).get(class_id)
    return dict(entry) if entry else None


@dataclass(frozen=True)
class LaunchFailure:
    class_id: str
    exit_codes: frozenset[int]
    patterns: tuple[re.Pattern[str], ...]

    def first_match(self, lines: Iterable[str]) -> tuple[int, str] | None:
        """(1-based line number, line) of the first srun launch-failure line."""
        for lineno, line in enumerate(lines, start=1):
            if line.startswith("srun:") and any(p.search(line) for p in self.patterns):
                return lineno, line.rstrip("\n")
        return None


@lru_cache(maxsize=1)
def launch_failure() -> LaunchFailure:
    entry = _catalog()["launch_failure"]
    return LaunchFailure(
        class_id=str(entry["class"]),
        exit_codes=frozenset(int(c) for c in entry["exit_codes"]),
        patterns=tuple(re.compile(p) for p in entry["patterns"]),
    )
