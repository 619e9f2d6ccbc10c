"""Shared pieces of the progress parsers: prefix stripping, number parsing, the parser protocol."""

from __future__ import annotations

import math
import re
import time
from typing import Protocol

from console.events import Event
from console.monitor.eta import EtaEstimator
from console.monitor.text import RAY_PREFIX_RE

# "[mcore 1step] " labels added by scripts such as sft_resume_diamond.sh (sed "s/^/[...] /").
_LABEL_RE = re.compile(r"^\[[^\]\n]{1,60}\] ")
_NUM_RE = re.compile(
    r"^(?:np\.\w+\()?\s*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf))\s*\)?$"
)


def strip_prefixes(text: str) -> str:
    """Remove leading script labels and Ray actor prefixes (in any order, a few deep)."""
    for _ in range(4):
        if not text or text[0] not in "[(":
            return text
        m = _LABEL_RE.match(text) or RAY_PREFIX_RE.match(text)
        if m is None:
            return text
        text = text[m.end() :]
    return text


def parse_number(text: str) -> float | None:
    """``0.5``, ``np.float64(0.5)``, ``np.int64(3)``, ``nan``, ``-inf``, ``True`` -> float; else None."""
    s = text.strip()
    if s in ("True", "False"):
        return 1.0 if s == "True" else 0.0
    m = _NUM_RE.match(s)
    if m is None:
        return None
    try:
        return float(m.group(1))
    except ValueError:
        return None


def json_number(v: float) -> float | str:
    """NaN/Inf as strings so events.jsonl stays valid JSON."""
    if math.isnan(v) or math.isinf(v):
        return str(v)
    return v


def parse_clock(text: str) -> float | None:
    """tqdm's ``MM:SS`` / ``H:MM:SS`` / ``1d, H:MM:SS`` -> seconds; ``?`` -> None."""
    s = text.strip()
    days = 0
    if "d," in s:
        d, _, s = s.partition("d,")
        try:
            days = int(d.strip())
        except ValueError:
            return None
        s = s.strip()
    parts = s.split(":")
    if not parts or not all(p.isdigit() for p in parts):
        return None
    total = 0
    for p in parts:
        total = total * 60 + int(p)
    return float(total + days * 86400)


class ProgressParser(Protocol):
    source: str

    def feed(self, text: str, now: float | None = None) -> list[Event]: ...


class ParserState:
    """What every parser tracks; subclasses fill it in."""

    source = "unknown"

    def __init__(self) -> None:
        self.step: int | None = None
        self.total: int | None = None
        self.done: int | None = None
        self.resumed_from: int | None = None
        self.completed = False
        self.eta = EtaEstimator()
        self._last_progress: tuple[object, ...] | None = None
        self._phase: str | None = None

    def _progress(self, now: float | None, eta_s: float | None = None, force: bool = False) -> list[Event]:
        key = (self.step, self.total, self.done, eta_s)
        if self.step is None or (key == self._last_progress and not force):
            return []
        self._last_progress = key
        if eta_s is None and self.total is not None and self.done is not None:
            eta_s = self.eta.eta_s(self.total - self.done)
        st = self.eta.step_time_s
        data = {
            "step": self.step,
            "total": self.total,
            "done": self.done,
            "eta_s": eta_s,
            "step_time_s": round(st, 3) if st is not None else None,
            "resumed_from": self.resumed_from,
            "source": self.source,
        }
        return [Event("progress", data=data, t=now if now is not None else time.time())]

    def _phase_event(self, name: str, now: float) -> list[Event]:
        """A ``phase`` event, unless it is the phase already said."""
        if name == self._phase:
            return []
        self._phase = name
        return [Event("phase", data={"name": name, "source": self.source}, t=now)]

    def _complete(self, reason: str, now: float | None, text: str = "") -> list[Event]:
        if self.completed:
            return []
        self.completed = True
        data: dict[str, object] = {"reason": reason, "source": self.source}
        if text:
            data["text"] = text[:300]
        return [Event("complete", data=data, t=now if now is not None else time.time())]
