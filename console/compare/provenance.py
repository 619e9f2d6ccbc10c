"""What a run was: framework, levels, variants, model, seed, overrides, env, Bridge and framework
commits, hardware, from its ``spec.json``, ``plan.json``, ``state.json``, ``doctor.json`` and logs;
and what differs between two runs, each difference classed as the change under test (``code``), a
different experiment (``config``), the seed (``seed``), or context (``info``)."""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console.compare.series import RunSeries
from console.compare.tolerances import Rules
from console.fileio import read_json
from console.plan.overrides import effective_values
from console.redact import redact_env, redact_text

DEFAULT_SEED = "default"
CODE_ENV = ("PYTHONPATH",)  # differs with the Bridge checkout: part of the change, not the config


@dataclass
class RunFacts:
    id: str
    path: str
    framework: str
    levels: list[int] = field(default_factory=list)
    variants: list[str] = field(default_factory=list)
    model: str | None = None
    status: str | None = None
    verdict: str | None = None
    overrides: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    seed: str = DEFAULT_SEED
    bridge: str | None = None
    repo: str | None = None
    hardware: str = "not recorded"
    created: float | None = None
    links: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _git_line(
    run_dir: Path, plan: dict[str, Any], state: Mapping[str, Any], path: str | None, which: str
) -> str | None:
    """'<commit> plus dirty files ...' as the report writes it, from the plan's git steps' logs."""
    from console.report import _repo_state  # the report's own reading of the git steps

    try:
        logs = {"steps": {s.get("name"): {"log": s.get("log")} for s in state.get("steps") or []}}
        return _repo_state(run_dir, plan.get("steps") or [], logs, path, which)
    except (OSError, KeyError, TypeError, ValueError):
        return None


def _recorded_bridge(extra: dict[str, Any]) -> str | None:
    rec = extra.get("bridge_state")
    if not isinstance(rec, dict) or not rec.get("commit"):
        return None
    dirty = list(rec.get("dirty") or [])
    tail = "no dirty files" if not dirty else "dirty files: " + ", ".join(dirty[:20])
    ref = f" ({rec['ref']})" if rec.get("ref") else ""
    return f"{rec['commit']}{ref} plus {tail}"


def _hardware(series: RunSeries | None, doctor: dict[str, Any]) -> str:
    if series is not None and series.gpu:
        names = Counter(peak.name for peak in series.gpu.values())
        return ", ".join(f"{n}x {name}" for name, n in sorted(names.items()))
    for check in doctor.get("checks") or []:
        if check.get("id") in ("gpus", "devices", "visible_devices") and check.get("evidence"):
            return str(check["evidence"]).splitlines()[0][:120]
    return "no GPU samples (CPU)" if series is not None else "not recorded"


def read_facts(run_dir: Path, series: RunSeries | None, rules: Rules) -> RunFacts:
    run_dir = Path(run_dir)
    spec = read_json(run_dir / "spec.json", {}) or {}
    plan = read_json(run_dir / "plan.json", {}) or {}
    state = read_json(run_dir / "state.json", {}) or {}
    doctor = read_json(run_dir / "doctor.json", {}) or {}
    extra = spec.get("extra") or {}
    remedy = extra.get("remedy") or {}
    overrides = effective_values(
        [str(o) for o in (spec.get("overrides") or [])] + [str(o) for o in (remedy.get("overrides") or [])]
    )
    seed_keys = [k for k in overrides if k.rsplit(".", 1)[-1] in rules.seed_key_suffixes]
    seed = ",".join(f"{k}={overrides[k]}" for k in sorted(seed_keys)) or DEFAULT_SEED
    envs = [s.get("env") or {} for s in plan.get("steps") or [] if s.get("kind") == "train"]
    env = {str(k): str(v) for e in [*envs, spec.get("env") or {}] for k, v in e.items()}  # the spec's win
    bridge = _recorded_bridge(extra) or _git_line(run_dir, plan, state, spec.get("bridge_repo"), "bridge")
    repo = _git_line(run_dir, plan, state, spec.get("repo"), "repo") if spec.get("repo") else None
    links = {k: str(state[k]) for k in ("baseline_run", "candidate_run", "linked_from") if state.get(k)}
    return RunFacts(
        id=run_dir.name,
        path=str(run_dir),
        framework=str(spec.get("framework") or "unknown"),
        levels=list(spec.get("levels") or []),
        variants=[str(v) for v in spec.get("variants") or []],
        model=spec.get("model"),
        status=state.get("status"),
        verdict=state.get("verdict"),
        overrides={k: redact_text(v) for k, v in overrides.items()},
        env=redact_env(env),
        seed=seed,
        bridge=bridge,
        repo=repo,
        hardware=_hardware(series, doctor),
        created=state.get("created"),
        links=links,
    )


def differences(base: RunFacts, cand: RunFacts, rules: Rules) -> list[dict[str, Any]]:
    """Every field that differs: ``{"field", "baseline", "candidate", "kind"}``."""
    out: list[dict[str, Any]] = []

    def add(name: str, b: Any, c: Any, kind: str) -> None:
        if b != c:
            out.append(
                {
                    "field": name,
                    "baseline": b if b not in (None, "", []) else "-",
                    "candidate": c if c not in (None, "", []) else "-",
                    "kind": kind,
                }
            )

    add("framework", base.framework, cand.framework, "config")
    add("levels", "/".join(map(str, base.levels)), "/".join(map(str, cand.levels)), "config")
    change = set(rules.change_variants)
    bv, cv = set(base.variants), set(cand.variants)
    add("variants (planted change)", ", ".join(sorted(bv & change)), ", ".join(sorted(cv & change)), "code")
    add("variants", ", ".join(sorted(bv - change)), ", ".join(sorted(cv - change)), "config")
    add("model", base.model or "default", cand.model or "default", "config")
    add("seed", base.seed, cand.seed, "seed")
    seed_keys = {
        k for k in (*base.overrides, *cand.overrides) if k.rsplit(".", 1)[-1] in rules.seed_key_suffixes
    }
    for key in sorted(set(base.overrides) | set(cand.overrides)):
        if key in seed_keys:
            continue
        ignored = any(fnmatch.fnmatchcase(key, pat) for pat in rules.ignore_override_keys)
        kind = "info" if ignored else "config"
        add(
            f"override {key}",
            base.overrides.get(key, "(not set)"),
            cand.overrides.get(key, "(not set)"),
            kind,
        )
    for key in sorted(set(base.env) | set(cand.env)):
        kind = "code" if key in CODE_ENV else "config"
        add(f"env {key}", base.env.get(key, "(not set)"), cand.env.get(key, "(not set)"), kind)
    add("Bridge", base.bridge or "not recorded", cand.bridge or "not recorded", "code")
    add("framework repo", base.repo or "not recorded", cand.repo or "not recorded", "config")
    add("hardware", base.hardware, cand.hardware, "info")
    return out
