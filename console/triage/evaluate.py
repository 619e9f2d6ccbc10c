"""Score triage against a corpus of real logs (JSON lines), the way ``../shared/tools/triage-eval`` does.

A case is ``{"id", "source_url", "log_excerpt", "expected_class", "expected_verdict", "split"?}``;
``expected_class``/``expected_verdict`` may be lists of acceptable answers; ``"pass"`` / ``"Pass"``
means a successful run, for which Pass or Incomplete with no primary is right. A failing case whose
verdict comes out Pass is a *false Pass*.

The excerpt is written to a file and triaged in-process (``triage_files``), exactly like the
command line does, so the score is the CLI's score without one process per case.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console.triage.scan import triage_files


@dataclass
class CaseResult:
    id: str
    split: str
    want_class: list[str]
    want_verdict: list[str]
    got_class: str | None
    got_verdict: str
    verdict_ok: bool
    class_ok: bool
    false_pass: bool
    evidence: str = ""


@dataclass
class Score:
    name: str
    results: list[CaseResult] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.results)

    def pct(self, attr: str) -> float:
        return 100.0 * sum(getattr(r, attr) for r in self.results) / self.n if self.n else 0.0

    @property
    def verdict_pct(self) -> float:
        return self.pct("verdict_ok")

    @property
    def class_pct(self) -> float:
        return self.pct("class_ok")

    @property
    def false_pass(self) -> int:
        return sum(r.false_pass for r in self.results)

    @property
    def misses(self) -> list[CaseResult]:
        return [r for r in self.results if not (r.verdict_ok and r.class_ok)]


def load_cases(path: Path) -> list[dict[str, Any]]:
    cases = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{i}: not JSON: {exc.msg}") from None
        if not isinstance(case, dict) or "log_excerpt" not in case:
            raise ValueError(f"{path}:{i}: a case needs log_excerpt")
        cases.append(case)
    return cases


def _as_list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def score_case(case: dict[str, Any], workdir: Path) -> CaseResult:
    path = workdir / "case.log"
    path.write_text(str(case["log_excerpt"]) + "\n", encoding="utf-8")
    res = triage_files([path])
    want_v = _as_list(case.get("expected_verdict"))
    want_c = _as_list(case.get("expected_class"))
    got_v = str(res.get("verdict"))
    primary = res.get("primary")
    got_c = primary.get("class") if primary else None
    false_pass = False
    if want_v == ["Pass"]:
        v_ok = got_v in ("Pass", "Incomplete")
        c_ok = got_c is None
    else:
        v_ok = got_v in want_v
        c_ok = got_c in want_c
        false_pass = got_v == "Pass" and "Pass" not in want_v
    return CaseResult(
        id=str(case.get("id")),
        split=str(case.get("split") or "all"),
        want_class=want_c,
        want_verdict=want_v,
        got_class=got_c,
        got_verdict=got_v,
        verdict_ok=v_ok,
        class_ok=c_ok,
        false_pass=false_pass,
        evidence=str((primary.get("evidence") if primary else None) or "")[:120],
    )


def score_cases(cases: Iterable[dict[str, Any]], by_split: bool = True, name: str = "") -> dict[str, Score]:
    """Scores keyed by split (``"all"`` for cases without one)."""
    out: dict[str, Score] = {}
    with tempfile.TemporaryDirectory(prefix="rlc-eval-") as tmp:
        for case in cases:
            r = score_case(case, Path(tmp))
            key = r.split if by_split else "all"
            out.setdefault(key, Score(f"{name}:{key}" if name else key)).results.append(r)
    return out


def table(scores: Iterable[Score], verbose: bool = False) -> str:
    rows = [f"{'corpus:split':<34} {'cases':>5} {'verdict%':>8} {'class%':>7} {'falsePass':>9} {'misses':>6}"]
    misses: list[str] = []
    for s in scores:
        rows.append(
            f"{s.name:<34} {s.n:>5} {s.verdict_pct:>8.1f} {s.class_pct:>7.1f} {s.false_pass:>9} "
            f"{len(s.misses):>6}"
        )
        for r in s.misses if not verbose else s.results:
            mark = "ok  " if r.verdict_ok and r.class_ok else "MISS"
            # held-out excerpts must not guide rules: their evidence is not printed
            shown = r.evidence if r.evidence and r.split != "heldout" else ""
            misses.append(
                f"{mark} [{s.name}] {r.id}: want {'|'.join(r.want_class)}/{'|'.join(r.want_verdict)} "
                f"got {r.got_class}/{r.got_verdict}" + (f"  <{shown}>" if shown else "")
            )
    return "\n".join(rows + ([""] + misses if misses else []))
