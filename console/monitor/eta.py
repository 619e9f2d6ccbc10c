"""ETA from measured step times, and stall detection (no progress for too long -> ``hang``)."""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Iterable

from console.events import Event


class EtaEstimator:
    """Time per step (the median of the last ``window`` intervals between ``observe``d steps, robust
    to a slow first step, or of the step times the log reports) and the time left."""

    def __init__(self, window: int = 8) -> None:
        self._seen: deque[tuple[int, float]] = deque(maxlen=window + 1)
        self._reported: deque[float] = deque(maxlen=window)

    def observe(self, step: int, now: float) -> None:
        if self._seen and step <= self._seen[-1][0]:
            if step < self._seen[-1][0]:  # restarted (a resumed run in the same log)
                self._seen.clear()
            else:
                return
        self._seen.append((step, now))

    def report_step_time(self, seconds: float) -> None:
        if seconds > 0:
            self._reported.append(seconds)

    @property
    def step_time_s(self) -> float | None:
        if self._reported:
            return statistics.median(self._reported)
        if len(self._seen) < 2:
            return None
        pts = list(self._seen)
        per = [(t1 - t0) / (s1 - s0) for (s0, t0), (s1, t1) in zip(pts, pts[1:], strict=False) if s1 > s0]
        return statistics.median(per) if per else None

    def eta_s(self, remaining_steps: int) -> float | None:
        st = self.step_time_s
        if st is None or remaining_steps < 0:
            return None
        return round(st * remaining_steps, 1)


class StallDetector:
    """One ``hang`` event when no ``activity`` (or progress event ``observe``d) came for ``timeout_s``;
    ``check`` it periodically; re-arms on activity."""

    PROGRESS_TYPES = frozenset({"progress", "metrics", "phase", "complete"})

    def __init__(self, timeout_s: float, now: float | None = None) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self.timeout_s = timeout_s
        self._last = time.time() if now is None else now
        self._fired = False

    def activity(self, now: float | None = None) -> None:
        self._last = time.time() if now is None else now
        self._fired = False

    def observe(self, events: Iterable[Event], now: float | None = None) -> None:
        if any(e.type in self.PROGRESS_TYPES for e in events):
            self.activity(now)

    def check(self, now: float | None = None) -> Event | None:
        now = time.time() if now is None else now
        idle = now - self._last
        if idle >= self.timeout_s and not self._fired:
            self._fired = True
            return Event("hang", data={"idle_s": round(idle, 1), "timeout_s": self.timeout_s})
        return None
