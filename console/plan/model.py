"""Plan and Step: the ordered, exact commands a run spec becomes (console/CONTRACTS.md)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, TypedDict, cast

from console.redact import MASK, redact_argv, redact_env
from console.spec import RunSpec


# One step of plan.json (``Step.to_dict``), in the file's key order.
class StepRecord(TypedDict):
    name: str
    title: str
    argv: list[str]
    env: dict[str, str]
    unset: list[str]
    cwd: str
    gpus: int
    proves: str
    criteria: list[str]
    level: int | None
    variant: str | None
    deliverable: str
    kind: str  # setup | check | train | metrics
    log_files: list[str]
    tb_dir: str | None
    metrics_json: str | None
    checks: list[str]
    total_steps: int | None
    on_failure: str  # stop | continue
    report_metrics: list[str]
    notes: list[str]


STEP_FIELDS = tuple(StepRecord.__annotations__)

# A catalog-drift finding of plan.json (``console.plan.resolve.Drift.to_dict``).
DriftRecord = TypedDict(
    "DriftRecord",
    {
        "step": str,
        "kind": str,  # missing_path | unknown_key | key_exists
        "item": str,
        "origin": str,  # catalog | wrapper | user
        "where": str,
        "closest": str | None,
        "source": str,
        "class": str,  # catalog_drift
        "message": str,
    },
)

# step -> (cwd role, config, catalog args, user args): what resolve_plan needs (not serialized)
ResolveInputs = dict[str, tuple[str, str | None, list[str], list[str]]]


class PlanRecord(TypedDict):
    """plan.json (``Plan.to_dict``)."""

    spec: dict[str, Any]  # RunSpec.to_dict()
    warnings: list[str]
    steps: list[StepRecord]
    drift: list[DriftRecord]


@dataclass
class Step:
    name: str
    title: str
    argv: list[str]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    unset: list[str] = field(default_factory=list)
    gpus: int = 0
    proves: str = ""
    criteria: list[str] = field(default_factory=list)
    level: int | None = None
    variant: str | None = None
    deliverable: str = "setup"
    kind: str = "setup"
    log_files: list[str] = field(default_factory=list)
    tb_dir: str | None = None
    metrics_json: str | None = None
    checks: list[str] = field(default_factory=list)
    total_steps: int | None = None
    on_failure: str = "stop"
    # extra (optional) key: metrics the report should quote when present (e.g. weight-transfer timings)
    report_metrics: list[str] = field(default_factory=list)
    # extra (optional) key: where the catalog follows upstream over the written procedure (report shows it)
    notes: list[str] = field(default_factory=list)

    def to_dict(self, redact: bool = True) -> StepRecord:
        """The plan.json form. ``redact`` masks secret env values (never write an unredacted plan)."""
        d = cast(StepRecord, {k: copy.copy(getattr(self, k)) for k in STEP_FIELDS})  # lists copied
        if redact:
            d["env"] = redact_env(self.env)
            d["argv"] = redact_argv(list(self.argv))
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        kw = {k: data[k] for k in STEP_FIELDS if k in data}
        for key in ("argv", "unset", "criteria", "log_files", "checks", "report_metrics", "notes"):
            if key in kw and kw[key] is not None:
                kw[key] = [str(x) for x in kw[key]]
        if "env" in kw:
            kw["env"] = {str(k): str(v) for k, v in (kw["env"] or {}).items()}
        return cls(**kw)


@dataclass
class Plan:
    spec: RunSpec
    steps: list[Step] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # catalog_drift findings (console/plan/resolve.py): a step names a path or key the checkout lacks
    drift: list[DriftRecord] = field(default_factory=list)
    resolve_inputs: ResolveInputs = field(default_factory=dict, repr=False, compare=False)

    def to_dict(self, redact: bool = True) -> PlanRecord:
        spec = self.spec.to_dict()
        if redact:
            spec["env"] = redact_env(spec.get("env") or {})
            spec["overrides"] = redact_argv(list(spec.get("overrides") or []))
        return {
            "spec": spec,
            "warnings": list(self.warnings),
            "steps": [s.to_dict(redact=redact) for s in self.steps],
            "drift": [d.copy() for d in self.drift],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        return cls(
            spec=RunSpec.from_dict(data.get("spec") or {}),
            steps=[Step.from_dict(s) for s in data.get("steps") or []],
            warnings=[str(w) for w in data.get("warnings") or []],
            # plan.json's own records, read back
            drift=cast(
                "list[DriftRecord]", [dict(d) for d in data.get("drift") or [] if isinstance(d, dict)]
            ),
        )

    def step(self, name: str) -> Step | None:
        return next((s for s in self.steps if s.name == name), None)

    @property
    def gpus(self) -> int:
        return max((s.gpus for s in self.steps), default=0)


__all__ = ["MASK", "STEP_FIELDS", "DriftRecord", "Plan", "PlanRecord", "ResolveInputs", "Step", "StepRecord"]
