"""Metric anomalies read from log lines: a NaN/Inf grad norm over consecutive steps, an exploding
grad norm (against its own history, or beyond EXPLODE_ABSOLUTE from the first reports), a reward collapse,
a KL divergence that blows up (beyond KL_ABSOLUTE, or KL_RATIO times its own median).

A NaN/Inf *loss* is already decisive on one line (a catalog rule). A single non-finite grad norm is
not: fp16 loss scaling skips such steps routinely, so it takes two consecutive reports.
Values are read from ``key: value`` / ``key=value`` pairs (verl ``actor/grad_norm:np.float64(nan)``,
Megatron ``grad norm: 1.23``, NeMo-RL ``Grad norm: 0.5``, tqdm ``reward=0.4``, the HF Trainer's dict
``{'grad_norm': nan}``, ESPnet's sentence ``WARNING: The grad norm is nan.``), numbers also with thousands
separators (``kl_divergence_mean: 1,568,987.96``).
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

LITERALS = (
    "grad_norm",
    "grad norm",
    "Grad norm",
    "grad-norm",
    "gradient norm",
    "reward",
    "Reward",
    "kl_",
    "_kl",
    "/kl",
    "kl:",
    "kl=",
    "KL",
)

_PAIR = re.compile(
    r"(?P<key>[A-Za-z][\w/@.\-]*(?: [a-z][\w/@.\-]*){0,2})['\"]?(?:\s*(?::|=)|\s+is)\s*"
    r"(?:np\.float\d+\(|tensor\()?(?P<val>[-+]?(?:nan|inf(?:inity)?|\d+(?:,\d+)*(?:\.\d*)?(?:[eE][-+]?\d+)?))(?!\w|\.\d)",
    re.IGNORECASE,
)
_STEP = re.compile(r"(?:\bstep[:= ]\s*|\biteration\s+|global_step[:=]\s*)(\d+)", re.IGNORECASE)

# A long metric line (verl's ``step:N - key:value - ...``) is printed with the same text every step but its
# numbers: the pairs _PAIR reads in it depend only on that text (see _Shape), so the line is matched against
# the shapes of earlier lines first, and _PAIR runs over it only for a new shape.
_RUN = re.compile(r"[0-9]+")
SHAPE_MIN_LEN = 16  # shorter lines: _PAIR alone
SHAPE_MAX_LEN = 4096
SHAPES = 8  # shapes kept (most recently used first)
SHAPE_CANDIDATES = 256  # shapes seen once, remembered to learn them when seen again

EXPLODE_RATIO = 100.0  # a grad norm this many times the median of the earlier ones...
EXPLODE_MIN = 1000.0  # ...and at least this large
EXPLODE_ABSOLUTE = (
    1e8  # two consecutive grad norms this large explode with no history (from the first reports)
)
COLLAPSE_PEAK = 0.2  # a reward whose median over the earlier reports had reached this...
COLLAPSE_FRACTION = 0.05  # ...and then stays at or below this fraction of that median...
COLLAPSE_WINDOW = 16  # earlier reports whose median is the level (a single lucky batch is not one)
COLLAPSE_STEPS = 5  # ...for this many consecutive reports
KL_ABSOLUTE = 1e3  # a mean KL (policy vs reference/old policy) this large: the policy left the reference
KL_RATIO = 100.0  # or this many times the median of its earlier reports...
KL_MIN = 1.0  # ...and at least this large (healthy KL estimates stay well below 1)
KL_WINDOW = 16  # earlier KL reports whose median is the level
# a key naming a KL that is not the divergence itself (its coefficient, target, controller) or an extreme of it
_KL_NOT = frozenset(
    ("coef", "coeff", "ctl", "target", "beta", "weight", "horizon", "max", "min", "std", "clip")
)
_KEY_SPLIT = re.compile(r"[/_.@\-\s]+")


@dataclass
class Anomaly:
    kind: str  # "grad_norm_nonfinite" | "grad_norm_exploding" | "reward_collapse" | "kl_exploding"
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
    if "kl" in k:
        parts = set(_KEY_SPLIT.split(k))
        if (
            "kl" in parts or "kl divergence" in k or any(p.startswith("kl") and "div" in p for p in parts)
        ) and not (parts & _KL_NOT):
            return "kl"
    return None


class _Shape(NamedTuple):
    """A line with its ASCII digit runs as ``[0-9]+``, and each value and the step number _PAIR and _STEP
    read in it as a group: what they read in any line of that shape.

    Every item of _PAIR and _STEP treats an ASCII digit by its class only (``\\d``, ``\\w``, not a letter,
    not ``.``, not a space, and under unbounded repetition), and no match or group of theirs starts or ends
    inside a digit run (a key starts with a letter; a value or a step number follows a non-digit and is
    followed by a non-digit). So two lines that differ only in the contents of their nonempty digit runs
    give the same matches, run for run: the same keys up to digits (which ``_kind`` ignores), and values
    and step numbers at the same places, made of the same runs and the same text between them.
    """

    rx: re.Pattern[str]
    step: int  # the group of the step number, 0 for none
    plan: tuple[tuple[str, int], ...]  # (kind, group of the value) of each pair read


def _shape_of(body: str, read: list[tuple[str, tuple[int, int]]]) -> _Shape | None:
    """The shape of ``body``, given the (kind, span of the value) of each pair _PAIR read in it."""
    m = _STEP.search(body)
    spans = sorted({span for _, span in read} | ({m.span(1)} if m else set()))
    runs = [r.span() for r in _RUN.finditer(body)]
    edges = {x for span in spans for x in span}
    overlap = any(a[1] > b[0] for a, b in zip(spans, spans[1:], strict=False))
    if overlap or any(s < x < e for x in edges for s, e in runs):
        return None  # cannot happen (see _Shape): then the line is not learned
    group = {span: i + 1 for i, span in enumerate(spans)}
    opens, closes, run_ends = {s for s, _ in spans}, {e for _, e in spans}, dict(runs)
    parts, at = [], 0
    for p in sorted(edges | set(run_ends) | set(run_ends.values()) | {0, len(body)}):
        if p > at:
            parts.append("[0-9]+" if at in run_ends else re.escape(body[at:p]))
        parts.append(")" * (p in closes) + "(" * (p in opens))
        at = p
    plan = tuple((kind, group[span]) for kind, span in read)
    return _Shape(re.compile("".join(parts)), group[m.span(1)] if m else 0, plan)


KINDS = 3  # grad_norm, reward, kl
MEDIAN_WINDOW = 64  # earlier grad norms kept for the median (constant cost per line)


@dataclass
class MetricWatch:
    """Constant work per metric line: bounded windows, a running reward peak."""

    grad: deque[tuple[int, int | None, float]] = field(default_factory=lambda: deque(maxlen=2))
    grad_before: deque[float] = field(default_factory=lambda: deque(maxlen=MEDIAN_WINDOW))
    reward: deque[tuple[int, int | None, float]] = field(default_factory=lambda: deque(maxlen=COLLAPSE_STEPS))
    reward_before: deque[float] = field(default_factory=lambda: deque(maxlen=COLLAPSE_WINDOW))
    kl_before: deque[float] = field(default_factory=lambda: deque(maxlen=KL_WINDOW))
    found: set[str] = field(default_factory=set)
    shapes: list[_Shape] = field(default_factory=list)
    learn: bool = True  # False: _PAIR on every line (the reference the shapes are tested against)
    _once: set[str] = field(default_factory=set)

    def read(self, body: str) -> tuple[int | None, list[tuple[str, str]]]:
        """The step number in ``body`` (when it has a pair) and the (kind, value text) of the first pair of
        each kind _PAIR reads in it, in order."""
        n = len(body)
        learn = self.learn and SHAPE_MIN_LEN <= n <= SHAPE_MAX_LEN
        if learn:
            shapes = self.shapes
            for i, sh in enumerate(shapes):
                m = sh.rx.fullmatch(body)
                if m is not None:
                    if i:
                        shapes.insert(0, shapes.pop(i))
                    if not sh.plan:
                        return None, []
                    step = int(m.group(sh.step)) if sh.step else None
                    return step, [(kind, m.group(g)) for kind, g in sh.plan]
        out: list[tuple[str, str]] = []
        read: list[tuple[str, tuple[int, int]]] = []
        for m in _PAIR.finditer(body):
            kind = _kind(m.group("key"))
            if kind is None or any(k == kind for k, _ in out):
                continue
            out.append((kind, m.group("val")))
            read.append((kind, m.span("val")))
            if len(out) == KINDS:  # every kind read: later pairs would be skipped (saves scanning the rest)
                break
        if learn:
            self._learn(body, read)
        return (find_step(body) if out else None), out

    def _learn(self, body: str, read: list[tuple[str, tuple[int, int]]]) -> None:
        """Keep the shape of a line seen a second time (a line seen once costs a skeleton, not a compile)."""
        skeleton = _RUN.sub("0", body)
        if skeleton not in self._once:
            if len(self._once) >= SHAPE_CANDIDATES:
                self._once.clear()
            self._once.add(skeleton)
            return
        self._once.discard(skeleton)
        shape = _shape_of(body, read)
        if shape is not None:
            self.shapes.insert(0, shape)
            del self.shapes[SHAPES:]

    def feed(self, lineno: int, body: str) -> list[Anomaly]:
        step, pairs = self.read(body)
        out: list[Anomaly] = []
        for kind, text in pairs:
            if kind == "reward" and "reward_collapse" in self.found:
                continue  # reported once: a collapsed reward keeps reporting, nothing more to find in it
            try:
                value = float(text.replace(",", ""))
            except ValueError:
                continue
            if kind == "kl":
                a = self._check_kl(lineno, step, value)
            elif kind == "grad_norm":
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
        return out

    def trailing_nonfinite_grad(self) -> Anomaly | None:
        """The last grad-norm report when it is NaN/Inf right after a finite one and nothing reported since:
        read only for a finished log that ends there (one such report in a run that went on is fp16 noise)."""
        if len(self.grad) < 2 or "grad_norm_nonfinite" in self.found:
            return None
        g0, g1 = self.grad
        if not math.isfinite(g0[2]) or math.isfinite(g1[2]):
            return None
        return Anomaly(
            "grad_norm_nonfinite_last",
            g1[0],
            [g0[0], g1[0]],
            g1[1],
            f"grad norm {g0[2]:g} then {g1[2]} on the log's last report",
        )

    def _check_grad(self) -> Anomaly | None:
        if len(self.grad) < 2:
            return None
        g0, g1 = self.grad

        def found(kind: str, evidence: str) -> Anomaly:
            return Anomaly(kind, g0[0], [g0[0], g1[0]], g0[1], evidence)

        if not math.isfinite(g0[2]) and not math.isfinite(g1[2]):
            return found("grad_norm_nonfinite", f"grad norm {g0[2]} then {g1[2]} on consecutive reports")
        if not (math.isfinite(g0[2]) and math.isfinite(g1[2])):
            return None
        low = min(g0[2], g1[2])
        if low >= EXPLODE_ABSOLUTE:
            return found(
                "grad_norm_exploding",
                f"grad norm {g0[2]:g}, {g1[2]:g} on consecutive reports, beyond any healthy scale",
            )
        # the median is only needed when both values reach EXPLODE_MIN (the usual line: no sort at all)
        if len(self.grad_before) >= 3 and low >= EXPLODE_MIN:
            prev = sorted(self.grad_before)
            base = prev[len(prev) // 2]
            if base > 0 and low >= max(EXPLODE_MIN, EXPLODE_RATIO * base):
                return found(
                    "grad_norm_exploding", f"grad norm {g0[2]:g}, {g1[2]:g} vs a median of {base:g} before"
                )
        return None

    def _check_kl(self, lineno: int, step: int | None, value: float) -> Anomaly | None:
        """One KL report far beyond any healthy scale, or KL_RATIO times the median of the earlier ones."""
        before = self.kl_before
        if not math.isfinite(value):
            return None  # a NaN/Inf KL is the catalog's rule (nan_inf_metric)
        found = None
        if value >= KL_ABSOLUTE:
            found = f"KL {value:g}, beyond any healthy scale"
        elif value >= KL_MIN and len(before) >= 3:
            prev = sorted(before)
            base = prev[len(prev) // 2]
            if base > 0 and value >= KL_RATIO * base:
                found = f"KL {value:g} vs a median of {base:g} before"
        before.append(value)
        return Anomaly("kl_exploding", lineno, [lineno], step, found) if found else None

    def _check_reward(self) -> Anomaly | None:
        if len(self.reward_before) < 3 or len(self.reward) < COLLAPSE_STEPS:
            return None
        last = self.reward[-1][2]
        # the median is at most the largest earlier value (all finite): a tail holding a value above that
        # bound cannot be a collapse, so the usual line needs no sort
        bound = COLLAPSE_FRACTION * max(self.reward_before)
        if not math.isfinite(last) or last > bound or any(r[2] > bound for r in self.reward):
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
