"""The comparison itself: curves aligned step by step, a row per metric, timing and GPU memory with
regressions, and the verdict: Same, Changed (which metrics, from which step) or Inconclusive (why)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from console.compare.provenance import RunFacts
from console.compare.series import RunSeries
from console.compare.tolerances import MetricRule, Rules, TimingRule

SAME, CHANGED, INCONCLUSIVE = "Same", "Changed", "Inconclusive"


@dataclass
class Aligned:
    name: str
    steps: list[int]
    base: list[float]
    cand: list[float]


def pick_tags(names: tuple[str, ...], a: RunSeries, b: RunSeries) -> tuple[str, str] | None:
    """The tag of each run: the first of ``names`` both have, else each run's first (the same number
    under another name: ``train/loss`` in a finished run's metrics.json, ``loss`` parsed from the log
    of a run still going)."""
    both = next((n for n in names if n in a.curves and n in b.curves), None)
    if both is not None:
        return both, both
    ta = next((n for n in names if n in a.curves), None)
    tb = next((n for n in names if n in b.curves), None)
    return (ta, tb) if ta is not None and tb is not None else None


def align(tags: tuple[str, str], a: RunSeries, b: RunSeries) -> Aligned:
    ca, cb = a.curves[tags[0]], b.curves[tags[1]]
    steps = sorted(set(ca) & set(cb))
    name = tags[0] if tags[0] == tags[1] else f"{tags[0]} | {tags[1]}"
    return Aligned(name, steps, [ca[s] for s in steps], [cb[s] for s in steps])


def _diff(b: float, c: float) -> tuple[float, float]:
    """(|c - b|, |c - b| / |b|) with NaN/Inf handled: equal non-finite values differ by 0."""
    if not (math.isfinite(b) and math.isfinite(c)):
        same = (math.isnan(b) and math.isnan(c)) or b == c
        return (0.0, 0.0) if same else (math.inf, math.inf)
    d = abs(c - b)
    return d, (d / abs(b) if b != 0 else (0.0 if d == 0 else math.inf))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _num(x: float | None) -> float | str | None:
    """JSON-safe number (NaN/Inf as text)."""
    return x if x is None or math.isfinite(x) else str(x)


def metric_row(rule: MetricRule, al: Aligned, last_k: int, across_seeds: bool) -> dict[str, Any]:
    k = min(last_k, len(al.steps))
    bm, cm = _mean(al.base[-k:]) if k else None, _mean(al.cand[-k:]) if k else None
    delta = (cm - bm) if bm is not None and cm is not None else None
    # a relative change of a near-zero value (below the metric's absolute floor) means nothing
    rel = (delta / abs(bm)) if delta is not None and bm and abs(bm) > rule.abs else None
    max_abs = max_rel = 0.0
    first_div: int | None = None
    for step, b, c in zip(al.steps, al.base, al.cand, strict=True):
        d, r = _diff(b, c)
        max_abs = max(max_abs, d)
        if not math.isfinite(b) or abs(b) > rule.abs:
            max_rel = max(max_rel, r)
        tol = rule.tolerance(b if math.isfinite(b) else 0.0)
        if first_div is None and d > (tol or 0.0):
            first_div = step
    if across_seeds:
        tol = rule.tolerance(bm or 0.0, across_seeds=True) if bm is not None else None
        judged = rule.judge and tol is not None and bm is not None and cm is not None
        within = (not judged) or (delta is not None and _diff(bm or 0.0, cm or 0.0)[0] <= (tol or 0.0))
        basis = "last-k mean across seeds"
    else:
        judged = rule.judge and bool(al.steps)
        within = first_div is None
        basis = "step by step"
    return {
        "key": rule.key,
        "metric": al.name,
        "judged": judged,
        "basis": basis,
        "tolerance": {
            "rel": rule.seed_rel if across_seeds else rule.rel,
            "abs": rule.seed_abs if across_seeds else rule.abs,
            "user": rule.overridden,
        },
        "steps": len(al.steps),
        "last_k": k,
        "baseline_mean": _num(bm),
        "candidate_mean": _num(cm),
        "delta": _num(delta),
        "rel_delta": _num(rel),
        "max_abs_diff": _num(max_abs),
        "max_rel_diff": _num(max_rel),
        "first_divergence": first_div,
        "within": within,
    }


def timing_row(rule: TimingRule, al: Aligned, rules: Rules, last_k: int) -> dict[str, Any]:
    k = min(last_k, len(al.steps))
    bm, cm = _mean(al.base[-k:]), _mean(al.cand[-k:])
    delta = cm - bm if bm is not None and cm is not None else None
    rel = delta / abs(bm) if delta is not None and bm else None
    worse = None if delta is None else delta if rule.better == "lower" else -delta
    regression = bool(
        worse is not None and worse > rules.regress_abs and (rel is None or abs(rel) > rules.regress_rel)
    )
    return {
        "key": rule.key,
        "label": rule.label,
        "metric": al.name,
        "better": rule.better,
        "last_k": k,
        "baseline": _num(bm),
        "candidate": _num(cm),
        "delta": _num(delta),
        "rel_delta": _num(rel),
        "regression": regression,
    }


def gpu_rows(a: RunSeries, b: RunSeries, rules: Rules) -> list[dict[str, Any]]:
    rows = []
    for index in sorted(set(a.gpu) | set(b.gpu), key=lambda i: (len(i), i)):
        pa, pb = a.gpu.get(index), b.gpu.get(index)
        base = pa.peak_bytes if pa else None
        cand = pb.peak_bytes if pb else None
        delta = cand - base if base is not None and cand is not None else None
        regression = bool(
            delta is not None
            and delta > rules.gpu_regress_bytes
            and base
            and delta / base > rules.gpu_regress_rel
        )
        rows.append(
            {
                "device": index,
                "name": peak.name if (peak := pb or pa) else "?",
                "baseline_bytes": base,
                "candidate_bytes": cand,
                "delta_bytes": delta,
                "regression": regression,
            }
        )
    return rows


def decide(
    rows: list[dict[str, Any]],
    diffs: list[dict[str, Any]],
    common_steps: int,
    rules: Rules,
    base: RunFacts,
    cand: RunFacts,
) -> tuple[str, list[str]]:
    """(verdict, reasons): every reason is one sentence a person can act on."""
    reasons: list[str] = []
    judged = [r for r in rows if r["judged"]]
    config = [d for d in diffs if d["kind"] == "config"]
    seeds_differ = any(d["kind"] == "seed" for d in diffs)
    for facts, role in ((base, "baseline"), (cand, "candidate")):
        if facts.verdict in ("Blocked", "Cancelled"):
            reasons.append(f"the {role} run is {facts.verdict}: no evidence about the change")
    if common_steps < rules.min_steps:
        reasons.append(f"too few steps: {common_steps} common training step(s), {rules.min_steps} needed")
    if not judged and common_steps >= rules.min_steps:
        reasons.append("no judged metric is present in both runs")
    if config:
        what = "; ".join(f"{d['field']}: {d['baseline']} vs {d['candidate']}" for d in config[:6])
        reasons.append(f"different configs ({what})")
    if reasons:
        return INCONCLUSIVE, reasons
    moved = [r for r in judged if not r["within"]]
    if seeds_differ:
        seed = next(d for d in diffs if d["kind"] == "seed")
        if moved:
            names = ", ".join(r["key"] for r in moved)
            return INCONCLUSIVE, [
                f"different seeds ({seed['baseline']} vs {seed['candidate']}) and {names} "
                "differ beyond the across-seed tolerance: rerun with equal seeds to tell "
                "the change from the seed"
            ]
        names = ", ".join(r["key"] for r in judged)
        return SAME, [
            f"different seeds ({seed['baseline']} vs {seed['candidate']}), but the last-k means of "
            f"{names} agree within the across-seed tolerance"
        ]
    if moved:
        moved.sort(key=lambda r: r["first_divergence"] if r["first_divergence"] is not None else 1 << 30)
        parts = [f"{r['key']} from step {r['first_divergence']}" for r in moved]
        return CHANGED, [f"beyond tolerance: {', '.join(parts)}"]
    return SAME, [
        f"every judged metric ({', '.join(r['key'] for r in judged)}) within tolerance at each of "
        f"{common_steps} common steps"
    ]


def closeness(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How closely the judged curves matched: the largest absolute and relative step difference."""
    best: dict[str, Any] = {
        "max_abs_diff": 0.0,
        "max_abs_metric": None,
        "max_rel_diff": 0.0,
        "max_rel_metric": None,
        "identical": True,
    }
    for r in rows:
        if not r["judged"]:
            continue
        a = float(r["max_abs_diff"]) if r["max_abs_diff"] is not None else 0.0
        rel = float(r["max_rel_diff"]) if r["max_rel_diff"] is not None else 0.0
        if a > best["max_abs_diff"] or best["max_abs_metric"] is None:
            best["max_abs_diff"], best["max_abs_metric"] = a, r["key"]
        if rel > best["max_rel_diff"] or best["max_rel_metric"] is None:
            best["max_rel_diff"], best["max_rel_metric"] = rel, r["key"]
        if a != 0.0:
            best["identical"] = False
    best["max_abs_diff"], best["max_rel_diff"] = _num(best["max_abs_diff"]), _num(best["max_rel_diff"])
    return best
