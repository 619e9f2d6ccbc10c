"""MetricWatch's shortcuts (no median sort when no anomaly is possible, no step search in a line that
cannot hold one) against the same watcher doing the full work on every line."""

from __future__ import annotations

import math
import random

from console.triage import metricwatch as mw
from console.triage.metricwatch import Anomaly, MetricWatch


class FullWatch(MetricWatch):
    """The checks as written before the shortcuts: always sort for the median."""

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
        if math.isfinite(g0[2]) and math.isfinite(g1[2]) and min(g0[2], g1[2]) >= mw.EXPLODE_ABSOLUTE:
            return Anomaly(
                "grad_norm_exploding",
                g0[0],
                [g0[0], g1[0]],
                g0[1],
                f"grad norm {g0[2]:g}, {g1[2]:g} on consecutive reports, beyond any healthy scale",
            )
        if len(self.grad_before) >= 3 and math.isfinite(g0[2]) and math.isfinite(g1[2]):
            prev = sorted(self.grad_before)
            base = prev[len(prev) // 2]
            if base > 0 and min(g0[2], g1[2]) >= max(mw.EXPLODE_MIN, mw.EXPLODE_RATIO * base):
                return Anomaly(
                    "grad_norm_exploding",
                    g0[0],
                    [g0[0], g1[0]],
                    g0[1],
                    f"grad norm {g0[2]:g}, {g1[2]:g} vs a median of {base:g} before",
                )
        return None

    def _check_reward(self) -> Anomaly | None:
        if len(self.reward_before) < 3 or len(self.reward) < mw.COLLAPSE_STEPS:
            return None
        before = sorted(self.reward_before)
        peak = before[len(before) // 2]
        if peak < mw.COLLAPSE_PEAK:
            return None
        tail = list(self.reward)
        if all(math.isfinite(v) and v <= mw.COLLAPSE_FRACTION * peak for _, _, v in tail):
            return Anomaly(
                "reward_collapse",
                tail[0][0],
                [x[0] for x in tail],
                tail[0][1],
                f"reward fell from a median of {peak:.3g} to {tail[-1][2]:g} for {mw.COLLAPSE_STEPS} reports",
            )
        return None


STEP_WORDS = [
    "step:{s}",
    "STEP {s}",
    "\u017ftep={s}",
    "Iteration {s}",
    "\u0130TERATION {s}",
    "global_step={s}",
    "stp {s}",
    "iter {s}",
    "",
]


def _value(rnd: random.Random, level: float) -> str:
    r = rnd.random()
    if r < 0.05:
        return rnd.choice(["nan", "inf", "-inf", "NaN"])
    if r < 0.15:
        return f"{rnd.uniform(1000, 1e6):.1f}"
    if r < 0.2:  # beyond EXPLODE_ABSOLUTE, with or without a history
        return f"{rnd.uniform(1e8, 1e13):.1f}"
    return f"{level * rnd.uniform(0, 2):.4f}"


def test_step_search_is_skipped_only_where_it_cannot_match() -> None:
    words = [w.format(s=7) for w in STEP_WORDS] + [
        "S\u0130TEP 3",
        "\u017fTEP 4",
        "it\u0117ration 5",
        "Step:8",
        "reward",
    ]
    for w in words:
        for line in (
            w,
            f"x {w} y",
            f"(Worker pid=1) {w} - reward=0.5",
            f"\u2022 {w.upper()}: 0.1",
            w.lower(),
        ):
            m = mw._STEP.search(line)
            assert mw.find_step(line) == (int(m.group(1)) if m else None), line


def test_shortcuts_give_the_same_anomalies_on_random_metric_streams() -> None:
    rnd = random.Random(17)
    kinds: set[str] = set()
    for _ in range(300):
        fast, full = MetricWatch(), FullWatch()
        level = rnd.choice([0.01, 0.5, 1.0, 50.0])
        for i in range(1, rnd.randint(5, 60)):
            if rnd.random() < 0.3:
                level = rnd.choice([0.0, 0.001, 0.5, 1.0, 2000.0])
            step = rnd.choice(STEP_WORDS).format(s=i)
            line = rnd.choice(
                [
                    f"{step} - actor/grad_norm:np.float64({_value(rnd, level)}) - critic/score/mean:{_value(rnd, level)}",
                    f"  \u2022 Avg Reward: {_value(rnd, level)}",
                    f"{step} | grad norm: {_value(rnd, level)} | reward={_value(rnd, level)}",
                ]
            )
            a, b = fast.feed(i, line), full.feed(i, line)
            assert [vars(x) for x in a] == [vars(x) for x in b], line
        assert fast.found == full.found
        kinds |= fast.found
    assert kinds == {
        "grad_norm_nonfinite",
        "grad_norm_exploding",
        "reward_collapse",
    }  # every check was reached
