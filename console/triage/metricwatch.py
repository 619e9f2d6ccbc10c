"""Metric anomalies read from log lines: a NaN/Inf grad norm over consecutive steps, an exploding
grad norm, a reward collapse.

A NaN/Inf *loss* is already decisive on one line (a catalog rule). A single non-finite grad norm is
not: fp16 loss scaling skips such steps routinely, so it takes two consecutive reports.
Values are read from ``key: value`` / ``key=value`` pairs (verl ``actor/grad_norm:np.float64(nan)``,
Megatron ``grad norm: 1.23``, NeMo-RL ``Grad norm: 0.5``, tqdm ``reward=0.4``, the HF Trainer's dict
``{'grad_norm': nan}``).
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache

LITERALS = ("grad_norm", "grad norm", "Grad norm", "grad-norm", "gradient norm", "reward", "Reward")

_PAIR = re.compile(
    r"(?P<key>[A-Za-z][\w/@.\-]*(?: [a-z][\w/@.\-]*){0,2})['\"]?\s*(?::|=)\s*"
    r"(?:np\.float\d+\(|tensor\()?(?P<val>[-+]?(?:nan|inf(?:inity)?|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?))(?![\w.])",
    re.IGNORECASE,
)
_STEP = re.compile(r"(?:\bstep[:= ]\s*|\biteration\s+|global_step[:=]\s*)(\d+)", re.IGNORECASE)

EXPLODE_RATIO = 100.0  # a grad norm this many times the median of the earlier ones...
EXPLODE_MIN = 1000.0  # ...and at least this large
COLLAPSE_PEAK = 0.2  # a reward whose median over the earlier reports had reached this...
COLLAPSE_FRACTION = 0.05  # ...and then stays at or below this fraction of that median...
COLLAPSE_WINDOW = 16  # earlier reports whose median is the level (a single lucky batch is not one)
COLLAPSE_STEPS = 5  # ...for this many consecutive reports


@dataclass
class Anomaly:
    kind: str  # "grad_norm_nonfinite" | "grad_norm_exploding" | "reward_collapse"
    line: int
    lines: list[int]
    step: int | None
    evidence: str


def find_step(body: str) -> int | None:
    """The step number _STEP reads in the line, if any."""
    # _STEP needs "step" or "iteration": their letters t, e, p, r, a, o, n have no case-insensitive
    # match outside ASCII, so the lowercased line holds "tep" or "ration" wherever it can match
    low = body.lower()
    if "tep" not in low and "ration" not in low:
        return None
    m = _STEP.search(body)
    return int(m.group(1)) if m else None


@lru_cache(maxsize=4096)  # a pure function of the key; the same keys repeat on every step
def _kind(key: str) -> str | None:
    k = key.lower()
    if "grad" in k and "norm" in k:
        return "grad_norm"
    if ("reward" in k or k.endswith("score/mean")) and not any(
        x in k for x in ("std", "min", "max", "model", "fn", "manager")
    ):
        return "reward"
    return None


MEDIAN_WINDOW = 64  # earlier grad norms kept for the median (constant cost per line)


@dataclass
class MetricWatch:
    """Constant work per metric line: bounded windows, a running reward peak."""

    grad: deque[tuple[int, int | None, float]] = field(default_factory=lambda: deque(maxlen=2))
    grad_before: deque[float] = field(default_factory=lambda: deque(maxlen=MEDIAN_WINDOW))
    reward: deque[tuple[int, int | None, float]] = field(default_factory=lambda: deque(maxlen=COLLAPSE_STEPS))
    reward_before: deque[float] = field(default_factory=lambda: deque(maxlen=COLLAPSE_WINDOW))
    found: set[str] = field(default_factory=set)

    def feed(self, lineno: int, body: str) -> list[Anomaly]:
        step = find_step(body)
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
            if kind == "grad_norm":
                if len(self.grad) == 2 and math.isfinite(self.grad[0][2]):
                    self.grad_before.append(self.grad[0][2])
                self.grad.append((lineno, step, value))
                a = self._check_grad()
            else:
                if len(self.reward) == COLLAPSE_STEPS and math.isfinite(self.reward[0][2]):
                    self.reward_before.append(self.reward[0][2])
                self.reward.append((lineno, step, value))
                a = self._check_reward()
            if a is not None and a.kind not in self.found:
                self.found.add(a.kind)
                where = f" at step {a.step}" if a.step is not None else ""
                a.evidence = f"{a.evidence}{where}: {body.strip()[:200]}"
                out.append(a)
            if len(seen) == 2:  # both kinds read: later pairs would be skipped (saves scanning the rest)
                break
        return out

    def _check_grad(self) -> Anomaly | None:
        if len(self.grad) < 2:
            return None
        g0, g1 = self.grad
        if not math.isfinite(g0[2]) and not math.isfinite(g1[2]):
            return Anomaly(
                "grad_norm_nonfinite",
                g0[0],
                [g0[0], g1[0]],
                g0[1],
                f"grad norm {g0[2]} then {g1[2]} on consecutive reports",
            )
        # the median is only needed when both values reach EXPLODE_MIN (the usual line: no sort at all)
        if (
            len(self.grad_before) >= 3
            and math.isfinite(g0[2])
            and math.isfinite(g1[2])
            and min(g0[2], g1[2]) >= EXPLODE_MIN
        ):
            prev = sorted(self.grad_before)
            base = prev[len(prev) // 2]
            if base > 0 and min(g0[2], g1[2]) >= max(EXPLODE_MIN, EXPLODE_RATIO * base):
                return Anomaly(
                    "grad_norm_exploding",
                    g0[0],
                    [g0[0], g1[0]],
                    g0[1],
                    f"grad norm {g0[2]:g}, {g1[2]:g} vs a median of {base:g} before",
                )
        return None

    def _check_reward(self) -> Anomaly | None:
        if len(self.reward_before) < 3 or len(self.reward) < COLLAPSE_STEPS:
            return None
        last = self.reward[-1][2]
        # the median is at most the largest earlier value (all finite): a newest value above that bound
        # cannot be part of a collapse, so the usual line needs no sort
        if not math.isfinite(last) or last > COLLAPSE_FRACTION * max(self.reward_before):
            return None
        before = sorted(self.reward_before)
        peak = before[len(before) // 2]  # the median level: robust to a single lucky batch
        if peak < COLLAPSE_PEAK:
            return None
        tail = list(self.reward)
        if all(math.isfinite(v) and v <= COLLAPSE_FRACTION * peak for _, _, v in tail):
            return Anomaly(
                "reward_collapse",
                tail[0][0],
                [x[0] for x in tail],
                tail[0][1],
                f"reward fell from a median of {peak:.3g} to {tail[-1][2]:g} for {COLLAPSE_STEPS} reports",
            )
        return None
