"""The triage engine: classify a log line by line (live) and give the triage JSON of DESIGN.md.

Feed cleaned lines (``console.monitor.text.clean_line``) with their line numbers; ``feed`` returns the
findings first seen on that line (for live ``finding`` events); ``result`` gives the whole verdict.

How the root cause is chosen is in ``console/triage/rootcause.py``; the rules are data
(``console/catalog/triage_rules.toml``).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from console.monitor.text import clean_line
from console.redact import redact_text
from console.triage import rootcause
from console.triage.rules import NOISE_CLASS, Catalog, Rule, default_catalog

FRAMEWORKS = ("nemo-rl", "verl", "demo")
EVIDENCE_MAX = 400
CONTEXT_WINDOW = 5000  # lines a context marker (e.g. "CUDA graph") stays in force

# Traceback structure (Python's own format, not domain knowledge).
TRACEBACK_START = "Traceback (most recent call last)"
FRAME_LITERAL = 'File "'
CHAIN_LITERALS = ("During handling of the above exception", "The above exception was the direct cause")
STRUCTURE_LITERALS = (TRACEBACK_START, FRAME_LITERAL, *CHAIN_LITERALS)
_FRAME_RE = re.compile(r'^\s*File "[^"]*", line \d+')
_EXC_RE = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Iteration|Failure))"
    r"(?:\((?P<inner>\w+)\))?(?::\s?(?P<msg>.*))?$"
)
_REPEATED_RE = re.compile(r"\s*\[repeated (\d+)x across cluster\]\s*$")
# Process prefixes that interleave several processes' output (Ray actors, torchrun ranks, compose...).
_PREFIX_RE = re.compile("|".join(f"(?:{p})" for p in (
    r"\((?:[^()]{0,160}?\bpid=[^)]{0,80}|raylet|gcs_server|autoscaler|monitor|dashboard\w*)\)\s?",
    r"\[(?:default|rank)\d+\]:\s?",
    r"\[\d+\] (?=\[)",
    r"[\w.-]+-\d+\s+\| ",
    r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? [\w./-]+:\d+\] ",
    r"\d{4}-\d\d-\d\d[ T][\d:,.]+ \| \w+ \| \w+ \| ",
    r"\[(?:[a-z0-9_-]+ )?\d+step\] ",
)))
_RAY_WRAPPERS = ("RayTaskError", "RayActorError")
DETECT_LINES = 5000  # framework evidence is looked for in the first lines only


def _line_automaton(literals: list[str]) -> Any:
    try:
        import ahocorasick_rs
    except ImportError:
        return None
    return ahocorasick_rs.AhoCorasick(literals, matchkind=ahocorasick_rs.MatchKind.Standard)


def split_prefix(text: str) -> tuple[str, str]:
    """(prefix, body): strip process prefixes so interleaved processes keep separate state."""
    parts: list[str] = []
    m = _PREFIX_RE.match(text)
    while m is not None and m.end() > 0:
        parts.append(m.group(0).strip())
        text = text[m.end():]
        m = _PREFIX_RE.match(text)
    return " ".join(parts), text


def evidence_text(text: str) -> str:
    text = redact_text(text.strip())
    return text if len(text) <= EVIDENCE_MAX else text[: EVIDENCE_MAX - 3] + "..."


@dataclass
class _Traceback:
    start: int
    frames: list[str] = field(default_factory=list)
    noise: bool = False
    chained: bool = False
    classified: bool = False
    exc_line: int | None = None
    exc_text: str | None = None


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
    remedy: dict[str, Any] | None = None
    tier: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"class": self.cls, "verdict": self.verdict, "line": self.line,
                             "count": self.count, "evidence": self.evidence, "rule": self.rule}
        if self.soft:
            d["soft"] = True
        if self.file is not None:
            d["file"] = self.file
        return d


class TriageEngine:
    """Line-by-line classifier. ``framework`` "unknown" (or None) means: detect it from the log."""

    def __init__(self, framework: str | None = "unknown", catalog: Catalog | None = None) -> None:
        self.cat = catalog or default_catalog()
        self.framework = framework if framework in FRAMEWORKS else "unknown"
        self._detect = self.framework == "unknown"
        self._fw_literals = [(fw, lit) for fw in ("demo", "verl", "nemo-rl")
                             for lit in self.cat.frameworks.get(fw, ())]
        literals = sorted({*self.cat.literals(), *STRUCTURE_LITERALS, "[repeated"})
        self._prefilter = re.compile("|".join(re.escape(x) for x in sorted(literals, key=len, reverse=True)))
        # literal -> indices of the rules / markers that list it (candidate selection per line)
        self._rules_by_lit: dict[str, list[int]] = {}
        for i, rule in enumerate(self.cat.rules):
            for lit in rule.literals:
                self._rules_by_lit.setdefault(lit, []).append(i)
        self._markers_by_lit: dict[str, list[int]] = {}
        for i, m in enumerate(self.cat.markers):
            for lit in m.literals:
                self._markers_by_lit.setdefault(lit, []).append(i)
        self._line_ac = _line_automaton(literals)
        self._findings: dict[tuple[str, str], Finding] = {}
        self._order: list[Finding] = []
        self._tbs: dict[str, _Traceback] = {}
        self._last_closed: dict[str, _Traceback] = {}
        self._chain_pending: set[str] = set()
        self._noise_pending: set[str] = set()
        self.context: dict[str, int] = {}
        self.evidence: dict[str, str] = {}
        self.step: int | None = None
        self.total: int | None = None
        self.completed_line: int | None = None
        self.complete_reason: str | None = None
        self.last_line = 0
        self.source: str | None = None

    # ------------------------------------------------------------------ public API

    def set_framework(self, framework: str) -> None:
        """Fix the framework (given by the user or detected by a scanner): no more detection."""
        if framework in FRAMEWORKS:
            self.framework = framework
            self._detect = framework == "nemo-rl"  # a NeMo-RL-shaped log may still turn out to be the demo

    @property
    def wants_more(self) -> bool:
        """True while a traceback is open: a scanner must feed the following lines too."""
        return bool(self._tbs) or bool(self._chain_pending) or bool(self._noise_pending)

    def feed(self, lineno: int, text: str) -> list[dict[str, Any]]:
        if "\x1b" in text or "\r" in text:
            text = clean_line(text)
        self.last_line = max(self.last_line, lineno)
        if self._detect and lineno > DETECT_LINES:
            self._detect = False
        present = self._present(text)
        if not self.wants_more and not present:
            if self._detect:
                self._detect_framework(text)
            return []
        count = 1
        if "[repeated" in text:
            m = _REPEATED_RE.search(text)
            if m:
                count = int(m.group(1))
                text = text[: m.start()]
        if self._detect:
            self._detect_framework(text)
        prefix, body = split_prefix(text)
        new: list[Finding] = []
        self._structure(prefix, body, lineno, new)
        tb = self._tbs.get(prefix)
        if tb is not None and tb.frames and body[:1] in (" ", "\t") and not _FRAME_RE.match(body):
            return [f.to_dict() for f in new]  # a source line quoted by a traceback, not output
        self._markers(body, lineno, present)
        rule = self._match_rule(body, present, noise_only=bool(tb and tb.noise))
        if rule is not None:
            if rule.cls == NOISE_CLASS and rule.id == "noise_exception_ignored_del":
                self._noise_pending.add(prefix)
            f = self._add(rule.cls, rule.verdict, lineno, body, rule.id, count, rule.soft, rule)
            if f is not None:
                new.append(f)
            if tb is not None and rule.verdict != "Noise":
                tb.classified = True
        if tb is not None:
            exc = _EXC_RE.match(body)
            if exc is not None:
                self._exception_line(prefix, tb, exc, lineno, body, new)
        return [f.to_dict() for f in new]

    def note_hang(self, idle_s: float, lineno: int | None = None) -> dict[str, Any]:
        """The monitor saw no progress for ``idle_s`` seconds: record a ``hang`` finding."""
        line = lineno if lineno is not None else self.last_line
        f = self._add("hang", self.cat.classes["hang"].verdict, line,
                      f"no progress for {idle_s:.0f} s", "no_progress_timeout", 1, False, None)
        return (f or self._findings[("hang", "no_progress_timeout")]).to_dict()

    def result(self, exit_code: int | None = None) -> dict[str, Any]:
        """The triage JSON of DESIGN.md. Can be called repeatedly while lines are still fed."""
        findings = [copy.copy(f) for f in self._order]
        findings.extend(self._pending_traceback_findings(findings))
        return rootcause.decide(self, findings, exit_code)

    # ------------------------------------------------------------------ internals

    def _detect_framework(self, text: str) -> None:
        for fw, lit in self._fw_literals:
            if lit in text:
                self.framework = fw
                # demo lines are NeMo-RL shaped: keep looking for demo evidence until demo is seen
                if fw == "demo" or fw == "verl":
                    self._detect = False
                return

    def _present(self, text: str) -> set[str]:
        """The catalog literals occurring in ``text`` (Aho-Corasick when available)."""
        if self._line_ac is not None:
            return set(self._line_ac.find_matches_as_strings(text, overlapping=True))
        if not self._prefilter.search(text):
            return set()
        return {lit for lit in self._rules_by_lit.keys() | self._markers_by_lit.keys() | set(STRUCTURE_LITERALS)
                if lit in text}

    def _match_rule(self, body: str, present: set[str], noise_only: bool = False) -> Rule | None:
        idx = sorted({i for lit in present for i in self._rules_by_lit.get(lit, ())})
        rules = self.cat.rules
        for i in idx:
            rule = rules[i]
            if noise_only and rule.verdict != "Noise":
                continue
            if rule.frameworks and self.framework not in rule.frameworks:
                continue
            if rule.context is not None:
                seen = self.context.get(rule.context)
                if seen is None or self.last_line - seen > CONTEXT_WINDOW:
                    continue
            if rule.regex.search(body):
                return rule
        return None

    def _markers(self, body: str, lineno: int, present: set[str]) -> None:
        idx = sorted({i for lit in present for i in self._markers_by_lit.get(lit, ())})
        for i in idx:
            m = self.cat.markers[i]
            hit = m.regex.search(body)
            if hit is None:
                continue
            groups = hit.groupdict()
            if m.kind == "progress":
                step = int(groups["step"])
                self.step = step if self.step is None else max(self.step, step)
                if groups.get("total"):
                    self.total = int(groups["total"])
                if m.complete_at_total and self.total and step >= self.total:
                    self._complete(lineno, m.id, body)
            elif m.kind == "total":
                self.total = int(groups["total"])
            elif m.kind == "complete":
                self._complete(lineno, m.id, body)
            elif m.kind == "context" and m.tag:
                self.context[m.tag] = lineno
            elif m.kind == "evidence" and m.tag:
                self.evidence.setdefault(m.tag, groups.get("value") or body.strip())

    def _complete(self, lineno: int, reason: str, body: str) -> None:
        if self.completed_line is None:
            self.completed_line = lineno
            self.complete_reason = reason
            self.evidence.setdefault("complete", evidence_text(body))

    def _structure(self, prefix: str, body: str, lineno: int, new: list[Finding]) -> None:
        if TRACEBACK_START in body:
            old = self._tbs.pop(prefix, None)
            if old is not None:
                self._close(prefix, old, new)
            tb = _Traceback(start=lineno)
            if prefix in self._chain_pending:
                tb.chained = True
                self._chain_pending.discard(prefix)
            if prefix in self._noise_pending:
                tb.noise = True
                self._noise_pending.discard(prefix)
            self._tbs[prefix] = tb
            return
        if any(lit in body for lit in CHAIN_LITERALS):
            old = self._tbs.pop(prefix, None)
            if old is not None:
                self._close(prefix, old, new)
            self._chain_pending.add(prefix)
            return
        if _FRAME_RE.match(body):
            tb = self._tbs.get(prefix)
            if tb is None:  # an excerpt that starts inside a traceback
                tb = _Traceback(start=lineno, noise=prefix in self._noise_pending)
                self._noise_pending.discard(prefix)
                self._tbs[prefix] = tb
            tb.frames.append(body.strip())
            return
        if (prefix in self._noise_pending and body.strip() and not body.startswith(" ")
                and "Exception ignored in" not in body):
            self._noise_pending.discard(prefix)

    def _exception_line(self, prefix: str, tb: _Traceback, exc: re.Match[str], lineno: int, body: str,
                        new: list[Finding]) -> None:
        etype = exc.group("type")
        if exc.group("inner") and any(w in etype for w in _RAY_WRAPPERS):
            tb.frames.clear()  # the remote traceback follows; keep the traceback open
            return
        tb.exc_line, tb.exc_text = lineno, body
        self._tbs.pop(prefix, None)
        self._close(prefix, tb, new)

    def _close(self, prefix: str, tb: _Traceback, new: list[Finding]) -> None:
        self._last_closed[prefix] = tb
        if tb.noise or tb.classified:
            return
        f = self._classify_traceback(tb, prefix)
        if f is not None:
            added = self._add(f.cls, f.verdict, f.line, f.evidence, f.rule, 1, False, None)
            if added is not None:
                new.append(added)
            tb.classified = True

    def _classify_traceback(self, tb: _Traceback, prefix: str) -> Finding | None:
        """A traceback no rule recognised: frame rules, else unknown_error (unless chained)."""
        line = tb.exc_line if tb.exc_line is not None else tb.start
        evidence = tb.exc_text or (tb.frames[-1] if tb.frames else TRACEBACK_START)
        frames = "\n".join(tb.frames)
        for fr in self.cat.frame_rules:
            if fr.regex.search(frames):
                return Finding(fr.cls, fr.verdict, line, evidence, fr.id)
        if tb.chained:
            prev = self._last_closed.get(prefix)
            if prev is not None and prev is not tb and prev.classified:
                return None
        if tb.exc_text is None:
            return None  # unterminated: decided at result() time
        etype = tb.exc_text.split(":", 1)[0].strip()
        return Finding("unknown_error", self.cat.classes["unknown_error"].verdict, line, evidence,
                       f"traceback:{etype}")

    def _pending_traceback_findings(self, existing: list[Finding]) -> list[Finding]:
        """Tracebacks still open at the end of the input (an excerpt cut mid-traceback)."""
        out: list[Finding] = []
        for prefix, tb in self._tbs.items():
            if tb.noise or tb.classified:
                continue
            f = self._classify_traceback(tb, prefix)
            if f is None and not any(x.verdict in ("Fail", "Blocked") for x in existing + out):
                f = Finding("unknown_error", self.cat.classes["unknown_error"].verdict, tb.start,
                            tb.frames[-1] if tb.frames else TRACEBACK_START, "traceback:unterminated")
            if f is not None:
                f.evidence = evidence_text(f.evidence)
                f.file = self.source
                out.append(f)
        return out

    def _add(self, cls: str, verdict: str, lineno: int, text: str, rule_id: str, count: int, soft: bool,
             rule: Rule | None) -> Finding | None:
        key = (cls, rule_id)
        f = self._findings.get(key)
        if f is not None:
            f.count += count
            return None
        f = Finding(cls=cls, verdict=verdict, line=lineno, evidence=evidence_text(text), rule=rule_id,
                    count=count, soft=soft, file=self.source,
                    advice=rule.advice if rule else None, remedy=rule.remedy if rule else None,
                    tier=rule.tier if rule else None)
        self._findings[key] = f
        self._order.append(f)
        return f
