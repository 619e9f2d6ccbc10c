"""Tolerances as data: ``console/catalog/compare.toml`` per framework and metric, plus user overrides."""

from __future__ import annotations

import math
from copy import deepcopy
from dataclasses import dataclass, replace
from typing import Any

from console.catalog.schema import CompareCatalog, CompareDefaults, load_checked
from console.errors import SpecError


@dataclass(frozen=True)
class MetricRule:
    """How one metric is compared: its candidate tag names and tolerances."""

    key: str
    names: tuple[str, ...]
    rel: float
    abs: float
    judge: bool = True
    seed_rel: float | None = None
    seed_abs: float | None = None
    overridden: bool = False

    def tolerance(self, base: float, across_seeds: bool = False) -> float | None:
        """The allowed |c - b| around ``base`` (None: not judged across seeds)."""
        if across_seeds:
            if self.seed_rel is None and self.seed_abs is None:
                return None
            return max(self.seed_abs or 0.0, (self.seed_rel or 0.0) * abs(base))
        return max(self.abs, self.rel * abs(base))


@dataclass(frozen=True)
class TimingRule:
    key: str
    names: tuple[str, ...]
    label: str
    better: str  # "lower" | "higher"


@dataclass
class Rules(CompareDefaults):
    """One framework's metric and timing rules, with compare.toml's [defaults]."""

    framework: str
    metrics: dict[str, MetricRule]
    timing: dict[str, TimingRule]


def _catalog() -> CompareCatalog:
    return load_checked("compare", CompareCatalog)


def known_frameworks() -> list[str]:
    return sorted(_catalog()["frameworks"])


def _tables(framework: str) -> tuple[dict[str, Any], dict[str, Any]]:
    table = _catalog()["frameworks"].get(framework) or {}
    metrics, timing = _tables(table["inherit"]) if table.get("inherit") else ({}, {})
    return {**metrics, **table.get("metrics", {})}, {**timing, **table.get("timing", {})}


def _metric_rule(key: str, raw: dict[str, Any]) -> MetricRule:
    def opt(name: str) -> float | None:
        return float(raw[name]) if name in raw else None

    return MetricRule(
        key=key,
        names=tuple(raw["names"]),
        rel=float(raw["rel"]),
        abs=float(raw["abs"]),
        judge=bool(raw.get("judge", True)),
        seed_rel=opt("seed_rel"),
        seed_abs=opt("seed_abs"),
    )


def guess_framework(tags: set[str]) -> str:
    """The catalog framework whose metric names the tags match best (for replays of unknown logs)."""
    best, score = "nemo-rl", -1
    for name in known_frameworks():
        if name == "demo":  # demo runs always know their framework
            continue
        metrics, timing = _tables(name)
        n = sum(1 for m in (*metrics.values(), *timing.values()) if any(t in tags for t in m["names"]))
        if n > score:
            best, score = name, n
    return best


def load_rules(framework: str) -> Rules:
    """The rules of ``framework`` (its own table, else the best match is the caller's business)."""
    metrics, timing = _tables(framework)
    return Rules(
        framework=framework,
        metrics={k: _metric_rule(k, v) for k, v in metrics.items()},
        timing={
            k: TimingRule(k, tuple(v["names"]), str(v.get("label", k)), str(v.get("better", "lower")))
            for k, v in timing.items()
        },
        **vars(deepcopy(_catalog()["defaults"])),  # every other field (the shape is checked at load)
    )


def parse_tolerance(text: str) -> tuple[str, float, float | None]:
    """``METRIC=REL[,ABS]`` -> (metric, rel, abs); SpecError (exit 2) on anything else."""
    metric, sep, value = text.partition("=")
    metric = metric.strip()
    if not sep or not metric:
        raise SpecError(f"--tolerance {text!r}: expected METRIC=REL[,ABS], e.g. loss=0.05 or reward=0.1,0.02")
    parts = [p.strip() for p in value.split(",")]
    if len(parts) > 2:
        raise SpecError(f"--tolerance {text!r}: expected METRIC=REL[,ABS] (at most two numbers)")
    try:
        nums = [float(p) for p in parts]
    except ValueError:
        raise SpecError(f"--tolerance {text!r}: REL and ABS must be numbers") from None
    if any(not math.isfinite(n) or n < 0 for n in nums):
        raise SpecError(f"--tolerance {text!r}: REL and ABS must be finite and >= 0")
    return metric, nums[0], nums[1] if len(nums) == 2 else None


def apply_overrides(
    rules: Rules, overrides: list[tuple[str, float, float | None]], available: set[str]
) -> Rules:
    """User tolerances win; a metric outside the catalog that both runs have becomes a judged metric."""
    metrics = dict(rules.metrics)
    for metric, rel, abs_ in overrides:
        key = next((k for k, r in metrics.items() if metric == k or metric in r.names), None)
        if key is not None:
            abs_ = metrics[key].abs if abs_ is None else abs_
            metrics[key] = replace(
                metrics[key], rel=rel, abs=abs_, judge=True, seed_rel=rel, seed_abs=abs_, overridden=True
            )
        elif metric in available:
            metrics[metric] = MetricRule(metric, (metric,), rel, abs_ or 0.0, True, rel, abs_ or 0.0, True)
        else:
            known = ", ".join(sorted(metrics))
            raise SpecError(f"--tolerance {metric}: no such metric in the catalog ({known}) nor in both runs")
    return replace(rules, metrics=metrics)
