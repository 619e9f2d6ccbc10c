"""The doctor's JSON (``rl-console doctor --json``, ``doctor.json``) as TypedDicts: one ``Check``
per preflight check and the ``DoctorResult`` around them. The JSON is unchanged: these types
describe the dicts the checks build, so the type checker holds every check to the same keys."""

from typing import Any, Literal, NotRequired, TypedDict

from console.catalog.schema import Remedy

Status = Literal["ok", "warn", "block"]


class Check(TypedDict):
    id: str
    status: Status
    evidence: str
    advice: str
    remedy: Remedy


class DoctorResult(TypedDict):
    verdict: Status  # the worst status of the checks
    checks: list[Check]
    interpreter: NotRequired[dict[str, Any]]  # the run's interpreter, when a check probed it


__all__ = ["Check", "DoctorResult", "Remedy", "Status"]
