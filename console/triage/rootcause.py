"""Choose the root cause among findings and decide the log's verdict.

Rules of the choice (the procedures' "first causal error, not the last traceback"):
- Noise findings never make a failure.
- Soft findings (warnings such as a fingerprint mismatch or a low-disk warning) count only when the
  run did not complete.
- Transient findings (a 429 that huggingface_hub retried, NCCL WARN lines, a helpers.cpp build line)
  count only when the run died (fatal tier) and nothing else named the cause; in a run that
  completed they are Noise.
- The fatal tier: a non-zero exit, an uncaught traceback, a fatal line (signal death, CUDA error,
  Hydra "Error executing job") or a traceback still open at the end. With one present and no named
  cause the result is ``unknown_error`` (``teardown_crash`` after completion or once the process had
  started to exit) with the deepest causal exception as evidence; never Incomplete.
- After training completed (or the process started to exit), symptom/fallback findings (tier >= 1:
  actor died, watchdog, an unknown traceback) are a ``teardown_crash``, unless the exit code says the
  process exited 0, in which case they are residual noise.
- A class that ``explains`` another (catalog) wins over it; an unknown_error never beats a named one.
- A user cancel (verdict Cancelled) wins unless a cause (tier 0) was found before it.
- Otherwise the primary is the earliest finding of the lowest tier (0 cause, 1 symptom, 2 unknown);
  the other classes found are listed as ``alternatives``.
- No failure and no completion in a finished log (not exited 0): a log that ends inside a phase that
  never finished (console/catalog/stall.toml, ``console.triage.stall``) is a ``hang`` (moderate confidence).
- No failure: "Pass" with completion evidence, otherwise "Incomplete".
"""

from __future__ import annotations

import copy
from typing import Protocol

from console.triage.finding import Finding
from console.triage.model import Alternative, Primary, TriageResult
from console.triage.rules import Catalog
from console.triage.stall import CUT_NOTE, stall_finding

# a retried failure within this many lines of a finished log's end is what the log stopped on
RETRY_TAIL_LINES = 5
ENDS_RETRYING = "log_ends_retrying"  # rule id suffix of that finding


class TriageEngine(Protocol):
    """What the choice reads of the engine (``console.triage.engine.TriageEngine``) once a log is fed."""

    cat: Catalog
    framework: str
    fatal: list[tuple[int, str, str]]
    root_exception: tuple[int, str] | None
    completed_line: int | None
    exiting_line: int | None
    last_line: int
    step: int | None
    total: int | None
    source: str | None
    tail: list[tuple[int, str]] | None

    @property
    def open_traceback(self) -> bool: ...

    def component_finding(self, text: str, lineno: int) -> Finding | None: ...

    def context_upgrades(self, findings: list[Finding]) -> None: ...

    def trailing_metric_finding(self) -> Finding | None: ...


FAILING = ("Fail", "Blocked")
DECISIVE = ("Fail", "Blocked", "Cancelled")
MAX_ALTERNATIVES = 3


def _tier(engine: TriageEngine, cls: str, f: Finding | None = None) -> int:
    if f is not None and f.tier is not None and f.cls == cls:
        return f.tier
    info = engine.cat.classes.get(cls)
    return info.tier if info else 2


def run_died(engine: TriageEngine, exit_code: int | None) -> bool:
    """Fatal-tier evidence: a non-zero exit, or (exit unknown) a fatal line or an uncaught exception."""
    if exit_code is not None:
        return exit_code != 0
    return bool(engine.fatal) or engine.root_exception is not None or engine.open_traceback


def decide(engine: TriageEngine, findings: list[Finding], exit_code: int | None) -> TriageResult:
    completed = engine.completed_line is not None
    died = run_died(engine, exit_code)
    # a death after the process started to exit is a teardown crash too (not a Pass: it did not complete)
    exiting = engine.exiting_line is not None and died and exit_code != 0
    ended = completed or exiting
    done_at = engine.completed_line or engine.exiting_line or 0
    for f in findings:
        if (
            ended
            and f.verdict in FAILING
            and f.line > done_at
            and _tier(engine, f.cls, f) >= 1
            and f.cls not in ("hang", "teardown_crash")
        ):
            if exit_code == 0:
                f.verdict = "Noise"
            else:
                f.rule = f"{f.rule}>teardown"
                f.cls = "teardown_crash"
                f.verdict = engine.cat.classes["teardown_crash"].verdict
                f.advice, f.remedy = None, None
    decisive = [f for f in findings if f.verdict in DECISIVE and f.count >= f.min_count]
    candidates = [f for f in decisive if not f.transient and not (f.soft and completed)]
    if died and not completed and all(f.cls == "unknown_error" for f in candidates):
        # retried/benign lines (a 429 that was retried, NCCL WARN, a helpers build) explain a death
        # only when nothing else does (an unrecognised traceback explains nothing)
        candidates = [f for f in decisive if f.transient] or candidates
    if not candidates and not completed and engine.tail and exit_code != 0 and not run_died(engine, None):
        # a finished log that stops inside a phase that never finished (console/catalog/stall.toml)
        stall = stall_finding(engine.tail, engine.source, ["unknown_error"] if died else [])
        # or one whose last grad-norm report turned NaN/Inf
        last = stall or engine.trailing_metric_finding() or _ends_retrying(engine, findings)
        candidates = [last] if last is not None else []
        findings.extend(candidates)
    if not candidates and died and (exit_code not in (None, 0) or not completed):
        f = _death_finding(engine, exit_code, ended, Finding)
        if f.cls == "unknown_error":
            engine.context_upgrades([f])  # e.g. an abort where ROCR/HIP_VISIBLE_DEVICES are set
        findings.append(f)
        candidates = [f]
    primary = _choose(engine, candidates) if candidates else None
    if primary is not None:
        verdict = primary.verdict
    elif completed:
        verdict = "Pass"
        for f in findings:  # retried/benign lines in a run that completed are residual noise
            if f.transient:
                f.verdict = "Noise"
    else:
        verdict = "Incomplete"
    findings.sort(key=lambda f: (f.file or "", f.line))
    out: TriageResult = {
        "verdict": verdict,
        "framework": engine.framework,
        "primary": _primary_dict(engine, primary) if primary else None,
        "findings": [f.to_dict() for f in findings],
        "progress": {"step": engine.step, "total": engine.total},
    }
    if primary is not None:
        out["alternatives"] = _alternatives(engine, primary, candidates)
    return out


def _ends_retrying(engine: TriageEngine, findings: list[Finding]) -> Finding | None:
    """A finished log whose last lines are a retried failure that counts at the end (a client still backing
    off from the Hub's 429s when the log stops, a node's first "Unable to connect to GCS" when `ray start`
    gives up): that failure, with less confidence, or None."""
    tail = [
        f
        for f in findings
        if f.counts_at_end
        and f.verdict in DECISIVE
        and (f.transient or f.count < f.min_count)  # retried, or seen fewer times than the rule needs
        and f.line >= engine.last_line - RETRY_TAIL_LINES
    ]
    if not tail:
        return None
    f = copy.copy(max(tail, key=lambda x: x.line))
    f.transient, f.rule = False, f"{f.rule}+{ENDS_RETRYING}"
    f.confidence = min(f.confidence, 0.45)
    f.evidence = f"the log ends while this is retried ({CUT_NOTE}): {f.evidence}"[:400]
    return f


def _death_finding(
    engine: TriageEngine, exit_code: int | None, completed: bool, finding_cls: type[Finding]
) -> Finding:
    """The run died and no rule explains it: unknown_error (teardown_crash after completion), with the
    deepest causal exception line as evidence, else the fatal line, else the exit code."""
    cls = "teardown_crash" if completed else "unknown_error"
    if engine.root_exception is not None and not completed:
        line, text = engine.root_exception
    elif engine.fatal and not completed:
        line, _, text = engine.fatal[0]
    else:
        line = engine.last_line
        text = (
            f"exit code {exit_code} after training completed"
            if completed
            else f"exit code {exit_code} with no recognised cause"
        )
    rule = (
        f"exit_code:{exit_code}"
        if exit_code not in (None, 0)
        else f"fatal:{engine.fatal[0][1] if engine.fatal else 'exception'}"
    )
    lines = sorted({line, *(x[0] for x in engine.fatal[:3])}) if not completed else [line]
    also: list[str] = []
    if cls == "unknown_error" and engine.root_exception is None and engine.fatal:
        # a death told by a fatal line alone (a launcher's panic message): the component it names
        comp = engine.component_finding(text, line)
        if comp is not None:
            cls, rule, also = comp.cls, f"{rule}+{comp.rule}", ["unknown_error"]
    return finding_cls(
        cls,
        engine.cat.classes[cls].verdict,
        line,
        text,
        rule,
        file=engine.source,
        confidence=0.3,
        lines=lines,
        also=also,
    )


def _choose(engine: TriageEngine, candidates: list[Finding]) -> Finding:
    """A user cancel wins unless a cause was already there before it; else the earliest of the lowest tier."""
    explained = {e for f in candidates for e in engine.cat.classes[f.cls].explains}
    if any(f.cls != "unknown_error" for f in candidates):
        explained.add("unknown_error")  # an unrecognised error never beats a named one
    kept = [f for f in candidates if f.cls not in explained]
    candidates = kept or candidates
    cancels = [f for f in candidates if f.verdict == "Cancelled"]
    if cancels:
        first = min(cancels, key=lambda f: f.line)
        causes = [
            f
            for f in candidates
            if f.verdict in FAILING
            and _tier(engine, f.cls, f) == 0
            and f.line < first.line
            and f.confidence >= 0.6
            and (f.file or "") == (first.file or "")
        ]
        if not causes:
            return first
        candidates = causes
    return _earliest_of_lowest_tier(engine, [f for f in candidates if f.verdict != "Cancelled"] or candidates)


def _alternatives(engine: TriageEngine, primary: Finding, candidates: list[Finding]) -> list[Alternative]:
    best: dict[str, Finding] = {}
    for f in candidates:
        if f.cls == primary.cls:
            continue
        cur = best.get(f.cls)
        if cur is None or (_tier(engine, f.cls, f), -f.confidence) < (
            _tier(engine, cur.cls, cur),
            -cur.confidence,
        ):
            best[f.cls] = f
    ranked = sorted(best.values(), key=lambda f: (_tier(engine, f.cls, f), -f.confidence, f.line))
    out: list[Alternative] = [
        {
            "class": f.cls,
            "verdict": f.verdict,
            "line": f.line,
            "confidence": round(f.confidence, 2),
            "evidence": f.evidence,
        }
        for f in ranked[:MAX_ALTERNATIVES]
    ]
    for cls in primary.also:  # the primary's own evidence also fits these classes
        if cls != primary.cls and cls not in best and len(out) < MAX_ALTERNATIVES:
            info = engine.cat.classes[cls]
            out.append(
                {
                    "class": cls,
                    "verdict": info.verdict,
                    "line": primary.line,
                    "confidence": round(primary.confidence * 0.6, 2),
                    "evidence": primary.evidence,
                }
            )
    return out


def _earliest_of_lowest_tier(engine: TriageEngine, candidates: list[Finding]) -> Finding:
    tier = min(_tier(engine, f.cls, f) for f in candidates)
    same = [f for f in candidates if _tier(engine, f.cls, f) == tier]
    # findings keep their file order (multi-file triage feeds files in the order given)
    return same[0] if len({f.file for f in same}) > 1 else min(same, key=lambda f: f.line)


def _primary_dict(engine: TriageEngine, f: Finding) -> Primary:
    info = engine.cat.classes[f.cls]
    advice = f.advice or info.advice_for(engine.framework)
    remedy = copy.deepcopy(f.remedy if f.remedy is not None else info.remedy_for(engine.framework))
    d: Primary = {
        "class": f.cls,
        "verdict": f.verdict,
        "line": f.line,
        "evidence": f.evidence,
        "advice": advice,
        "remedy": remedy,
        "title": info.title,
        "rule": f.rule,
        "confidence": round(f.confidence, 2),
        "lines": list(f.lines or [f.line]),
    }
    if f.file is not None:
        d["file"] = f.file
    return d
