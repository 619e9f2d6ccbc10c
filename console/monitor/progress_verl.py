"""verl output: the tqdm "Training Progress" bar (anywhere in a line), ``step:N - key:value``
metric lines (``np.float64(...)`` values; ``step:0`` is validation), resume lines of both trainer
generations, and completion (last step equals total, or the final validation). See
reference/notes-verl.md §2 and §6.3. The bar, the step line, the total and the completion are
``catalog/progress.toml``'s patterns, the ones triage reads too."""

from __future__ import annotations

import re
import time

from console.catalog.progress import FrameworkPatterns, ProgressPattern
from console.events import Event
from console.monitor.progress_base import ParserState, json_number, parse_clock, parse_number

_RESUME_RE = re.compile(r"Resuming from (.+?), setting global step to (\d+)")
_LEGACY_RESUME_RE = re.compile(r"Setting global step to (\d+)")
_PHASES = (
    ("[validate_config] All configuration checks passed", "Config validated"),
    ("ray init kwargs:", "Starting Ray"),
    ("all initialize finished, ready to fit", "Ready to fit"),
    ("Initial validation metrics", "Initial validation done"),
    ("Final validation metrics", "Final validation done"),
    ("Training from scratch", "Training from scratch"),
)


def parse_metrics_line(rest: str) -> dict[str, float | str]:
    """`` - k:v - k:v`` (the part after ``step:N``) -> {k: number}; non-numbers are dropped."""
    values: dict[str, float | str] = {}
    for part in rest.split(" - "):
        key, sep, raw = part.strip().rpartition(":")
        if not sep or not key:
            continue
        val = parse_number(raw)
        if val is not None:
            values[key] = json_number(val)
    return values


def _rate_to_step_time(rate: str) -> float | None:
    r = rate.strip()
    try:
        if r.endswith("s/it"):
            return float(r[:-4])
        if r.endswith("it/s"):
            v = float(r[:-4])
            return 1.0 / v if v > 0 else None
    except ValueError:
        return None
    return None


class VerlProgressParser(ParserState):
    source = "verl"

    def __init__(self) -> None:
        super().__init__()
        self._seen_bar = False
        self._patterns = FrameworkPatterns("verl")
        self._bar_pattern = self._patterns.by_id["verl_progress_bar"]
        self._step_pattern = self._patterns.by_id["verl_metrics_line"]

    def feed(self, text: str, now: float | None = None) -> list[Event]:
        now = time.time() if now is None else now
        out: list[Event] = []
        hits = self._patterns.matches(text)
        m = hits.get("verl_progress_bar")
        if m:
            out += self._bar(m, now)
        m = hits.get("verl_metrics_line")
        if m:
            out += self._step_line(int(m["step"]), m["rest"], now)
            return out
        m = hits.get("verl_total_steps")
        if m:
            self.total = int(m["total"])
            return out + self._progress(now)
        if "global step to" in text:
            m = _RESUME_RE.search(text) or _LEGACY_RESUME_RE.search(text)
            if m:
                n = int(m.groups()[-1])
                self.resumed_from = n
                self.step = self.done = n
                out += self._progress(now, force=True)
                out += self._phase_event(f"Resumed from step {n}", now)
                return out
        for needle, name in _PHASES:
            if needle in text:
                if name == "Training from scratch":
                    self.resumed_from = None
                out += self._phase_event(name, now)
                break
        if hits:  # the final validation line
            for pattern in self._patterns.completions:
                if pattern.id in hits:
                    out += self._complete(pattern.reason, now, text)
        return out

    def _bar(self, m: re.Match[str], now: float) -> list[Event]:
        n, total = int(m["step"]), int(m["total"])
        remaining = parse_clock(m["remaining"] or "")
        rate = m["rate"] or ""
        if not self._seen_bar and n > 0 and "?" in rate and self.resumed_from is None:
            self.resumed_from = n  # tqdm(initial=global_steps): the first render shows the resumed step
        self._seen_bar = True
        self.total = total
        return self._advance(n, _rate_to_step_time(rate), self._bar_pattern, now, eta_s=remaining)

    def _step_line(self, step: int, rest: str, now: float) -> list[Event]:
        values = parse_metrics_line(rest)
        out = [Event("metrics", data={"step": step, "values": values, "source": self.source}, t=now)]
        if step < self._step_pattern.min_step:
            return out  # validation before training, not a training step
        t = values.get("timing_s/step")
        return out + self._advance(step, t if isinstance(t, float) else None, self._step_pattern, now)

    def _advance(
        self,
        step: int,
        step_time: float | None,
        pattern: ProgressPattern,
        now: float,
        eta_s: float | None = None,
    ) -> list[Event]:
        """Training reached ``step`` (its time, when the line says it): progress, and completion at
        the total when ``pattern`` says so."""
        if step_time is not None:
            self.eta.report_step_time(step_time)
        if self.done is None or step >= self.done:
            self.step = self.done = step
        self.eta.observe(step, now)
        out = self._progress(now, eta_s=eta_s)
        if pattern.complete_at_total and self.total and step >= self.total:
            out += self._complete(pattern.reason, now)
        return out
