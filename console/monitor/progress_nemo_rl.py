"""NeMo-RL stdout: ``=== Step N/M ===`` banners (GRPO sync/async, SFT), ``▶`` phases, the
per-step results block and completion lines. See reference/notes-nemo-rl.md §3. The banner and the
completion lines are ``catalog/progress.toml``'s patterns, the ones triage reads too."""

from __future__ import annotations

import re
import time

from console.catalog.progress import FrameworkPatterns
from console.events import Event
from console.monitor.progress_base import ParserState, json_number, parse_number, strip_prefixes

_PHASE_RE = re.compile(r"^\s*▶\s*(.+?)[\s.,:…]*$")
_RESULT_RE = re.compile(r"^\s*•\s*([A-Za-z][\w /()-]*?):\s*(\S+?)s?(?:\s|$)")
# Results-block labels -> metric names (the TB names where one exists).
RESULT_KEYS = {
    "Loss": "loss",
    "Draft Loss": "draft_loss",
    "Generation KL Error": "gen_kl_error",
    "Avg Reward": "reward",
    "Avg Filtered Reward": "reward",
    "Avg Total Reward": "reward",
    "Mean Generation Length": "mean_gen_tokens_per_sample",
    "Total step time": "step_time_s",
    "Buffer Size": "buffer_size",
    "Avg Trajectory Age": "avg_trajectory_age",
    "Accuracy": "val_accuracy",
    "Validation loss": "val_loss",
    "Total validation time": "val_time_s",
}


class NemoRlProgressParser(ParserState):
    source = "nemo-rl"

    def __init__(self, source: str = "nemo-rl") -> None:
        super().__init__()
        self.source = source
        self._pending: dict[str, float | str] = {}
        self._patterns = FrameworkPatterns("nemo-rl")

    def _flush(self, now: float) -> list[Event]:
        if not self._pending or self.step is None:
            self._pending = {}
            return []
        values, self._pending = self._pending, {}
        return [Event("metrics", data={"step": self.step, "values": values, "source": self.source}, t=now)]

    def feed(self, text: str, now: float | None = None) -> list[Event]:
        now = time.time() if now is None else now
        line = strip_prefixes(text)
        hits = self._patterns.matches(line)
        m = hits.get("nemo_step_banner")
        if m:
            return self._banner(int(m["step"]), int(m["total"]), now)
        if "▶" in line:
            m = _PHASE_RE.match(line)
            if m:
                return self._phase_event(m.group(1), now)
        if "•" in line:
            m = _RESULT_RE.match(line)
            if m and m.group(1) in RESULT_KEYS:
                val = parse_number(m.group(2))
                if val is None:
                    return []
                key = RESULT_KEYS[m.group(1)]
                self._pending[key] = json_number(val)
                if key == "step_time_s":
                    self.eta.report_step_time(val)
                    if self.step is not None:
                        self.done = self.step
                    return self._flush(now) + self._progress(now)
            return []
        ending = next((p for p in self._patterns.completions if p.id in hits), None) if hits else None
        if ending is None:
            return []
        if self.step is not None:
            self.done = self.step
        return self._flush(now) + self._progress(now) + self._complete(ending.reason, now, line)

    def _banner(self, step: int, total: int, now: float) -> list[Event]:
        out = self._flush(now)
        if self.step is not None and step < self.step:
            # a new run in the same log (a resume leg): start over
            self.eta = type(self.eta)()
            self.completed = False
            self.resumed_from = None
            self._last_progress = None
        elif self.step is None and step > 1:
            self.resumed_from = step - 1
        self.step, self.total, self.done = step, total, step - 1
        self.eta.observe(step, now)
        self._phase = None
        return out + self._progress(now)
