"""Metric anomalies read from log lines: a NaN/Inf grad norm over consecutive steps, an exploding
grad norm, a reward collapse.

A NaN/Inf *loss* is already decisive on one line (a catalog rule). A single non-finite grad norm is
not: fp16 loss scaling skips such steps routinely, so it takes two consecutive reports.
Values are read from ``key: value`` / ``key=value`` pairs (verl ``actor/grad_norm:np.float64(nan)``,
Megatron ``grad norm: 1.23``, NeMo-RL ``Grad norm: 0.5``, tqdm ``reward=0.4``).
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field

LITERALS = ("grad_norm", "grad norm", "Grad norm", "grad-norm", "gradient norm", "reward", "Reward")

_PAIR = re.compile(
    r"(?P<key>[A-Za-z][\w/@.\-]*(?: [a-z][\w/@.\-]*){0,2})\s*(?::|=)\s*"
    r"(?:np\.float\d+\(|tensor\()?(?P<val>[-+]?(?:nan|inf(?:inity)?|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?))(?![\w.])",
    re.IGNORECASE)
_STEP = re.compile(r"(?:\bstep[:= ]\s*|\biteration\s+|global_step[:=]\s*)(\d+)", re.IGNORECASE)

EXPLODE_RATIO = 100.0  # a grad norm this many times the median of the earlier ones...
EXPLODE_MIN = 1000.0  # ...and at least this large
COLLAPSE_PEAK = 0.2  # a reward that had reached this...
COLLAPSE_FRACTION = 0.05  # ...and then stays at or below this fraction of its peak...
COLLAPSE_STEPS = 3  # ...for this many consecutive reports


@dataclass
class Anomaly:
    kind: str  # "grad_norm_nonfinite" | "grad_norm_exploding" | "reward_collapse"
    line: int
    lines: list[int]
    step: int | None
    evidence: str


def _kind(key: str) -> str | None:
    k = key.lower()
    if "grad" in k and "norm" in k:
        return "grad_norm"
    if ("reward" in k or k.endswith("score/mean")) and not any(x in k for x in ("std", "min", "max", "model", "fn",
                                                                                 "manager")):
        return "reward"
    return None


@dataclass
class MetricWatch:
    grad: list[tuple[int, int | None, float]] = field(default_factory=list)  # (line, step, value)
    reward: list[tuple[int, int | None, float]] = field(default_factory=list)
    found: set[str] = field(default_factory=set)
    # kept up to date on each report so that a run with thousands of steps costs O(log n) per report:
    _grad_sorted: list[float] = field(default_factory=list, repr=False)  # finite values of grad[:-2], sorted
    _reward_peak: float | None = field(default=None, repr=False)  # max finite value of reward[:-COLLAPSE_STEPS]

    def feed(self, lineno: int, body: str) -> list[Anomaly]:
        step_m = _STEP.search(body)
        step = int(step_m.group(1)) if step_m else None
        out: list[Anomaly] = []
        seen: set[str] = set()
        for m in _PAIR.finditer(body):
            kind = _kind(m.group("key"))
            if kind is None or kind in seen:
                continue
            seen.add(kind)
            try:
                value = float(m.group("val"))
            except ValueError:
                continue
            series = self.grad if kind == "grad_norm" else self.reward
            series.append((lineno, step, value))
            a = self._check_grad() if kind == "grad_norm" else self._check_reward()
            if a is not None and a.kind not in self.found:
                self.found.add(a.kind)
                a.evidence = f"{a.evidence}: {body.strip()[:200]}"
                out.append(a)
        return out

    def _check_grad(self) -> Anomaly | None:
        g = self.grad
        if len(g) >= 3 and math.isfinite(g[-3][2]):  # g[-3] just became one of the earlier reports
            bisect.insort(self._grad_sorted, g[-3][2])
        if len(g) >= 2 and not math.isfinite(g[-1][2]) and not math.isfinite(g[-2][2]):
            return Anomaly("grad_norm_nonfinite", g[-2][0], [g[-2][0], g[-1][0]], g[-2][1],
                           f"grad norm {g[-2][2]} then {g[-1][2]} on consecutive reports")
        prev = self._grad_sorted
        if len(prev) >= 3 and all(math.isfinite(x[2]) for x in g[-2:]):
            base = prev[len(prev) // 2]
            if base > 0 and all(x[2] >= max(EXPLODE_MIN, EXPLODE_RATIO * base) for x in g[-2:]):
                return Anomaly("grad_norm_exploding", g[-2][0], [g[-2][0], g[-1][0]], g[-2][1],
                               f"grad norm {g[-2][2]:g}, {g[-1][2]:g} vs a median of {base:g} before")
        return None

    def _check_reward(self) -> Anomaly | None:
        r = self.reward
        if len(r) < COLLAPSE_STEPS + 1:
            return None
        entered = r[-COLLAPSE_STEPS - 1][2]  # just became one of the reports before the tail
        if math.isfinite(entered) and (self._reward_peak is None or entered > self._reward_peak):
            self._reward_peak = entered
        if self._reward_peak is None:
            return None
        peak = self._reward_peak
        tail = r[-COLLAPSE_STEPS:]
        if peak >= COLLAPSE_PEAK and all(math.isfinite(v) and v <= COLLAPSE_FRACTION * peak for _, _, v in tail):
            return Anomaly("reward_collapse", tail[0][0], [x[0] for x in tail], tail[0][1],
                           f"reward fell from a peak of {peak:g} to {tail[-1][2]:g} for {COLLAPSE_STEPS} reports")
        return None
