"""Choose the root cause among findings and decide the log's verdict.

Rules of the choice (the procedures' "first causal error, not the last traceback"):
- Noise findings never make a failure.
- Soft findings (warnings such as a fingerprint mismatch or a low-disk warning) count only when the
  run did not complete.
- After training completed, symptom/fallback findings (tier >= 1: actor died, watchdog, an unknown
  traceback) are a ``teardown_crash``, unless the exit code says the process exited 0, in which
  case they are residual noise.
- The primary is the earliest finding of the lowest tier (0 cause, 1 symptom, 2 unknown).
- A non-zero exit code with no recognised cause is ``unknown_error`` (or ``teardown_crash`` when
  training had completed). ``teardown_crash`` is Fail: the procedures require a successful exit,
  but the report keeps the training evidence and calls it infra/flaky, not a numerics failure.
- No failure: "Pass" with completion evidence, otherwise "Incomplete".
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from console.triage.engine import Finding, TriageEngine

FAILING = ("Fail", "Blocked")


def _tier(engine: TriageEngine, cls: str, f: Finding | None = None) -> int:
    if f is not None and f.tier is not None and f.cls == cls:
        return f.tier
    info = engine.cat.classes.get(cls)
    return info.tier if info else 2


def decide(engine: TriageEngine, findings: list[Finding], exit_code: int | None) -> dict[str, Any]:
    from console.triage.engine import Finding

    completed = engine.completed_line is not None
    done_at = engine.completed_line or 0
    for f in findings:
        if completed and f.verdict in FAILING and f.line > done_at and _tier(engine, f.cls, f) >= 1 \
                and f.cls not in ("hang", "teardown_crash"):
            if exit_code == 0:
                f.verdict = "Noise"
            else:
                f.rule = f"{f.rule}>teardown"
                f.cls = "teardown_crash"
                f.verdict = engine.cat.classes["teardown_crash"].verdict
                f.advice, f.remedy = None, None
    candidates = [f for f in findings if f.verdict in FAILING and not (f.soft and completed)]
    if not candidates and exit_code not in (None, 0):
        cls = "teardown_crash" if completed else "unknown_error"
        text = (f"exit code {exit_code} after training completed" if completed
                else f"exit code {exit_code} with no recognised cause")
        f = Finding(cls, engine.cat.classes[cls].verdict, engine.last_line, text, f"exit_code:{exit_code}",
                    file=engine.source)
        findings.append(f)
        candidates = [f]
    primary = _earliest_of_lowest_tier(engine, candidates) if candidates else None
    if primary is not None:
        verdict = primary.verdict
    elif completed:
        verdict = "Pass"
    else:
        verdict = "Incomplete"
    findings.sort(key=lambda f: (f.file or "", f.line))
    return {
        "verdict": verdict,
        "framework": engine.framework,
        "primary": _primary_dict(engine, primary) if primary else None,
        "findings": [f.to_dict() for f in findings],
        "progress": {"step": engine.step, "total": engine.total},
    }


def _earliest_of_lowest_tier(engine: TriageEngine, candidates: list[Finding]) -> Finding:
    tier = min(_tier(engine, f.cls, f) for f in candidates)
    same = [f for f in candidates if _tier(engine, f.cls, f) == tier]
    # findings keep their file order (multi-file triage feeds files in the order given)
    return same[0] if len({f.file for f in same}) > 1 else min(same, key=lambda f: f.line)


def _primary_dict(engine: TriageEngine, f: Finding) -> dict[str, Any]:
    info = engine.cat.classes[f.cls]
    advice = f.advice or info.advice_for(engine.framework)
    remedy = copy.deepcopy(f.remedy if f.remedy is not None else info.remedy_for(engine.framework))
    d: dict[str, Any] = {"class": f.cls, "verdict": f.verdict, "line": f.line, "evidence": f.evidence,
                         "advice": advice, "remedy": remedy, "title": info.title, "rule": f.rule}
    if f.file is not None:
        d["file"] = f.file
    return d
