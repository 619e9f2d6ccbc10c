"""What every check needs: the spec, the plan's main step (env, cwd, GPUs) and injectable probes."""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console.catalog.schema import DoctorCatalog
from console.doctor.catalog import doctor_catalog
from console.rundir.paths import fill_run_dir
from console.spec import RunSpec

_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def free_bytes(path: str) -> int:
    """Free bytes on the filesystem holding `path` (the nearest existing ancestor)."""
    return shutil.disk_usage(existing_ancestor(path)).free


def existing_ancestor(path: str) -> str:
    p = Path(path).expanduser()
    while not p.exists() and p != p.parent:
        p = p.parent
    return str(p)


@dataclass
class Probes:
    """Readings of the machine that tests may replace (free space, NVML, processes, PATH)."""

    free_bytes: Callable[[str], int] = free_bytes
    gpus: Callable[[], Any] | None = None  # -> console.doctor.gpus.GpuReading; None: real NVML
    processes: Callable[[], list[tuple[int, str]]] | None = None  # -> [(pid, name)]; None: psutil
    which: Callable[[str], str | None] = shutil.which


def plan_dict(plan: Any) -> dict[str, Any] | None:
    if plan is None:
        return None
    if isinstance(plan, Mapping):
        return dict(plan)
    to_dict = getattr(plan, "to_dict", None)
    if not callable(to_dict):
        return None
    d: dict[str, Any]
    try:
        d = to_dict(redact=False)  # the real env (secrets included) for the probes; output is redacted
    except TypeError:
        d = to_dict()
    return d


def expand(value: str, env: Mapping[str, str]) -> str:
    """Expand $VAR, ${VAR} and ${VAR:-default} against `env` (never through a shell)."""

    def sub(m: re.Match[str]) -> str:
        return env.get(m.group(1) or m.group(3)) or m.group(2) or ""

    return _VAR_RE.sub(sub, value)


@dataclass
class DoctorContext:
    spec: RunSpec
    plan: dict[str, Any] | None
    run_dir: Path | None
    probes: Probes
    env: dict[str, str]  # the effective environment of the main step
    step_env: dict[str, str]  # only what the plan (or the doctor's fallback) sets
    cwd: str | None
    python: str
    gpus_needed: int
    catalog: DoctorCatalog = field(default_factory=doctor_catalog)
    # probes shared by several checks (the run's interpreter), computed once under the lock
    cache: dict[str, Any] = field(default_factory=dict, repr=False)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def framework(self) -> str:
        return self.spec.framework

    @property
    def is_demo(self) -> bool:
        return self.spec.framework == "demo"

    @property
    def bridge(self) -> Path | None:
        return Path(self.spec.bridge_repo).expanduser() if self.spec.bridge_repo else None

    @property
    def repo(self) -> Path | None:
        return Path(self.spec.repo).expanduser() if self.spec.repo else None

    def setting(self, name: str, default: str | None = None) -> str | None:
        """A variable as the main step will see it."""
        return self.env.get(name, default)

    def overrides(self) -> list[str]:
        """Hydra overrides of the spec and of the plan steps' argv."""
        argv = [a for step in self.steps() for a in step.get("argv") or [] if isinstance(a, str)]
        return [*self.spec.overrides, *(a for a in argv if "=" in a and not a.startswith("-"))]

    def override_value(self, key: str) -> str | None:
        values = [v for k, _, v in (o.partition("=") for o in self.overrides()) if k.lstrip("+") == key]
        return values[-1] if values else None  # the last one wins, as in Hydra

    def step_running(self, *argv_parts: str) -> str | None:
        """Name of the first plan step whose argv contains all of `argv_parts`, if any."""
        for step in self.steps():
            argv = [str(a) for a in step.get("argv") or []]
            if all(part in argv for part in argv_parts):
                return str(step.get("name"))
        return None

    def steps(self) -> list[dict[str, Any]]:
        return list((self.plan or {}).get("steps") or [])

    def path_setting(self, name: str, default: str | None = None) -> Path | None:
        value = self.setting(name) or default
        if not value:
            return None
        value = expand(value.replace("{model}", self.model() or ""), self.env)
        if (value == "~" or value.startswith("~/")) and self.env.get("HOME"):
            value = self.env["HOME"] + value[1:]
        return Path(value).expanduser()

    def model(self) -> str | None:
        """The model id or path the run uses."""
        if self.is_demo:
            return None
        named = self.override_value("policy.model_name") if self.framework == "nemo-rl" else None
        from_env = self.setting("MODEL_ID") if self.framework == "verl" else None
        return named or self.spec.model or from_env or self.catalog["defaults"]["model"].get(self.framework)


def _main_step(plan: dict[str, Any] | None) -> dict[str, Any] | None:
    steps: list[dict[str, Any]] = list((plan or {}).get("steps") or [])
    for kind in ("train", "check"):
        for step in steps:
            if step.get("kind") == kind and (step.get("env") or {}).get("PYTHONPATH"):
                return step
    for step in steps:
        if step.get("kind") == "train":
            return step
    return steps[0] if steps else None


def fallback_pythonpath(spec: RunSpec, base: Mapping[str, str]) -> str:
    """The procedures' PYTHONPATH: <bridge>/src:<bridge>/3rdparty/Megatron-LM:<repo>:$PYTHONPATH."""
    parts: list[str] = []
    if spec.bridge_repo:
        bridge = Path(spec.bridge_repo).expanduser()
        parts += [str(bridge / "src"), str(bridge / doctor_catalog()["paths"]["mcore_in_bridge"])]
    if spec.repo:
        parts.append(str(Path(spec.repo).expanduser()))
    if base.get("PYTHONPATH"):
        parts.append(base["PYTHONPATH"])
    return ":".join(p for p in ":".join(parts).split(":") if p)  # no empty entries


def _gpus_needed(spec: RunSpec, plan: dict[str, Any] | None, env: Mapping[str, str]) -> int:
    steps = list((plan or {}).get("steps") or [])
    if steps:
        return max(int(s.get("gpus") or 0) for s in steps)
    if spec.framework == "verl" and env.get("NUM_GPUS", "").isdigit():
        return int(env["NUM_GPUS"])
    return int(doctor_catalog()["defaults"]["gpus"].get(spec.framework, 0))


def build_context(
    spec: RunSpec,
    plan: Any = None,
    run_dir: Path | None = None,
    probes: Probes | None = None,
    base_env: Mapping[str, str] | None = None,
) -> DoctorContext:
    plan_d = plan_dict(plan)
    base = dict(os.environ if base_env is None else base_env)
    base.update(spec.env)
    step = _main_step(plan_d)
    step_env: dict[str, str] = {}
    unset: list[str] = []
    cwd = str(Path(spec.repo).expanduser()) if spec.repo else None
    if step is not None:
        rd = run_dir or ""
        step_env = {
            key: expand(fill_run_dir(str(value), rd), base) for key, value in (step.get("env") or {}).items()
        }
        unset = list(step.get("unset") or [])
        cwd = fill_run_dir(step.get("cwd") or cwd or "", rd) or None
    if "PYTHONPATH" not in step_env and spec.framework != "demo":
        step_env["PYTHONPATH"] = fallback_pythonpath(spec, base)
    env = {k: v for k, v in {**base, **step_env}.items() if k not in unset}
    python = str(spec.extra.get("python") or sys.executable)
    return DoctorContext(
        spec=spec,
        plan=plan_d,
        run_dir=run_dir,
        probes=probes or Probes(),
        env=env,
        step_env=step_env,
        cwd=cwd,
        python=python,
        gpus_needed=_gpus_needed(spec, plan_d, env),
    )
