"""console.plan: a RunSpec becomes ordered, exact steps (argv, env, cwd, GPUs, proves, criteria).

Public API (console/CONTRACTS.md):
- ``build_plan(spec) -> Plan`` (SpecError on bad input), ``Plan`` / ``Step`` with to_dict/from_dict
- ``render_sh(plan) -> str``: the same plan as a quoted shell script
- ``catalog_levels(framework) -> list[LevelInfo]``, ``recommend_levels(framework, touched) -> list[int]``
- ``validate_overrides(overrides, repo=None, config=None) -> list[str]`` (warnings; SpecError when bad)
"""

from __future__ import annotations

from dataclasses import dataclass

from console.catalog import load_guidance
from console.errors import SpecError
from console.plan.builder import build_plan, framework_catalog
from console.plan.model import Plan, Step
from console.plan.overrides import validate_overrides
from console.plan.render import render_sh


@dataclass(frozen=True)
class LevelInfo:
    number: int
    title: str
    required_when: str
    proves: str
    gpus: int
    variants: list[str]


def catalog_levels(framework: str) -> list[LevelInfo]:
    """The framework's coverage levels, for the guided screen."""
    cat = framework_catalog(framework)
    return [
        LevelInfo(
            number=lv.number,
            title=lv.title,
            required_when=lv.required_when,
            proves=lv.proves,
            gpus=lv.gpus,
            variants=[v.name for v in cat.variants if lv.number in v.levels],
        )
        for lv in cat.levels
    ]


def touched_areas() -> list[tuple[str, str]]:
    """(id, label) of the "what did your change touch?" answers."""
    return [(a.id, a.label) for a in load_guidance()]


def recommend_levels(framework: str, touched: list[str]) -> list[int]:
    """Levels the framework's Scope table requires for what the change touched (always Level 0)."""
    framework_catalog(framework)
    areas = {a.id: a for a in load_guidance()}
    levels = {0}
    for t in touched:
        if t not in areas:
            raise SpecError(f"unknown change area {t!r} (known: {', '.join(areas)})")
        levels.update(areas[t].levels.get(framework, ()))
    return sorted(levels)


__all__ = [
    "LevelInfo",
    "Plan",
    "Step",
    "build_plan",
    "catalog_levels",
    "recommend_levels",
    "render_sh",
    "touched_areas",
    "validate_overrides",
]
