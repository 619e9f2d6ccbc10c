"""A finding: one cause (or symptom, or noise) the engine saw in a log, with the lines it used.

Its own module so that the engine and the root-cause choice (``rootcause.py``) both build them
without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field

from console.triage.model import FindingRecord, Remedy


@dataclass
class Finding:
    cls: str
    verdict: str
    line: int
    evidence: str
    rule: str
    count: int = 1
    soft: bool = False
    file: str | None = None
    advice: str | None = None
    remedy: Remedy | None = None
    tier: int | None = None
    confidence: float = 0.9
    lines: list[int] = field(default_factory=list)
    transient: bool = False
    counts_at_end: bool = False  # transient, but the cause when a finished log ends on it (a retry loop)
    min_count: int = 1
    also: list[str] = field(default_factory=list)  # other classes the same evidence fits

    def to_dict(self) -> FindingRecord:
        d: FindingRecord = {
            "class": self.cls,
            "verdict": self.verdict,
            "line": self.line,
            "count": self.count,
            "evidence": self.evidence,
            "rule": self.rule,
            "confidence": round(self.confidence, 2),
            "lines": list(self.lines or [self.line]),
        }
        if self.soft:
            d["soft"] = True
        if self.transient:
            d["transient"] = True
        if self.file is not None:
            d["file"] = self.file
        return d
