"""Triage's JSON (``rl-console triage --json``, ``triage.json``, each step's triage in the verdict)
as TypedDicts: the findings, the primary cause, its alternatives and the whole result. The JSON is
unchanged: the engine builds these dicts, and the type checker holds it and its readers to the
keys. ("class" is a Python keyword, hence the functional form.)"""

from typing import Any, NotRequired, TypedDict

from console.catalog.schema import Remedy

FindingRecord = TypedDict(
    "FindingRecord",
    {
        "class": str,
        "verdict": str,  # Fail | Blocked | Cancelled | Noise
        "line": int,
        "count": int,
        "evidence": str,
        "rule": str,
        "confidence": float,
        "lines": list[int],
        "soft": NotRequired[bool],
        "transient": NotRequired[bool],
        "file": NotRequired[str],  # the log it is in, when several were triaged
    },
)

Primary = TypedDict(
    "Primary",
    {
        "class": str,
        "verdict": str,
        "line": int,
        "evidence": str,
        "advice": str,
        "remedy": Remedy,
        "title": str,
        "rule": str,
        # the engine's primaries have these; the ones the verdict makes up (a hang seen by the
        # monitor, a failed step whose log names no cause) do not
        "confidence": NotRequired[float],
        "lines": NotRequired[list[int]],
        "file": NotRequired[str],
    },
)

Alternative = TypedDict(
    "Alternative", {"class": str, "verdict": str, "line": int, "confidence": float, "evidence": str}
)


class Progress(TypedDict):
    step: int | None
    total: int | None


class TriageResult(TypedDict):
    verdict: str  # Pass | Fail | Blocked | Cancelled | Incomplete
    framework: str
    primary: Primary | None
    findings: list[FindingRecord]
    progress: Progress
    alternatives: NotRequired[list[Alternative]]


class Deliverable(TypedDict):
    name: str  # "Bridge-side checks", "Local Bridge import in NeMo-RL", ...
    status: str  # Pass | Fail | Blocked | Skipped | Not requested
    detail: str
    primary: NotRequired[dict[str, Any] | None]  # while deciding: the failing step's primary
    blocked: NotRequired[bool]  # a wrong/missing Bridge import: the run is Blocked


class StepVerdict(TypedDict):
    status: str  # the step's status in state.json
    exit_code: int | None
    verdict: str
    primary: Primary | None
    progress: Progress
    evidence: dict[str, str]
    log: str | None  # relative to the run folder
    reason: str | None
    findings: list[FindingRecord]


class Verdict(TypedDict):
    """``run_verdict``: the run's verdict per deliverable, and the run-wide triage (``triage.json``)."""

    verdict: str  # Pass | Fail | Blocked | Incomplete | Cancelled
    deliverables: list[Deliverable]
    primary: dict[str, Any] | None  # a step's Primary with "step" (and "file": its log) added
    limitations: list[str]
    follow_ups: list[str]
    framework: str
    findings: list[dict[str, Any]]  # every step's FindingRecords, "file" set to the step's log
    progress: Progress
    steps: dict[str, StepVerdict]
    # added to triage.json at the run's end (console/runs/finalize.py, the Slurm follower)
    reason: NotRequired[str]  # why the run ended so, when there is a reason
    slurm: NotRequired[dict[str, Any]]  # a Slurm run's job: job_id, state, reason, exit_code, nodes


__all__ = [
    "Alternative",
    "Deliverable",
    "FindingRecord",
    "Primary",
    "Progress",
    "Remedy",
    "StepVerdict",
    "TriageResult",
    "Verdict",
]
