"""Plan and Step: the ordered, exact commands a run spec becomes (console/CONTRACTS.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from console.redact import MASK, redact_argv, redact_env
from console.spec import RunSpec

STEP_FIELDS = (
    "name",
    "title",
    "argv",
    "env",
    "unset",
    "cwd",
    "gpus",
    "proves",
    "criteria",
    "level",
    "variant",
    "deliverable",
    "kind",
    "log_files",
    "tb_dir",
    "metrics_json",
    "checks",
    "total_steps",
    "on_failure",
    "report_metrics",
    "notes",
)


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

    def to_dict(self, redact: bool = True) -> dict[str, Any]:
        """The plan.json form. ``redact`` masks secret env values (never write an unredacted plan)."""
        d = {name: getattr(self, name) for name in STEP_FIELDS}
        d = {
            k: (list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v)
            for k, v in d.items()
        }
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
    drift: list[dict[str, Any]] = field(default_factory=list)
    # step -> (cwd role, config, catalog args, user args): what resolve_plan needs (not serialized)
    resolve_inputs: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def to_dict(self, redact: bool = True) -> dict[str, Any]:
        spec = self.spec.to_dict()
        if redact:
            spec["env"] = redact_env(spec.get("env") or {})
            spec["overrides"] = redact_argv(list(spec.get("overrides") or []))
        return {
            "spec": spec,
            "warnings": list(self.warnings),
            "steps": [s.to_dict(redact=redact) for s in self.steps],
            "drift": [dict(d) for d in self.drift],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        return cls(
            spec=RunSpec.from_dict(data.get("spec") or {}),
            steps=[Step.from_dict(s) for s in data.get("steps") or []],
            warnings=[str(w) for w in data.get("warnings") or []],
            drift=[dict(d) for d in data.get("drift") or [] if isinstance(d, dict)],
        )

    def step(self, name: str) -> Step | None:
        return next((s for s in self.steps if s.name == name), None)

    @property
    def gpus(self) -> int:
        return max((s.gpus for s in self.steps), default=0)


__all__ = ["Plan", "Step", "STEP_FIELDS", "MASK"]
