"""The run spec: what the user asked for. Shared by plan, runs, doctor, TUI and CLI."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from console.errors import SpecError

FRAMEWORKS = ("nemo-rl", "verl", "demo")
LAUNCHERS = ("local", "slurm")


@dataclass
class SlurmOptions:
    nodes: int = 1
    partition: str | None = None
    account: str | None = None
    time: str | None = None
    container: str | None = None
    mounts: list[str] = field(default_factory=list)
    gpus_per_node: int | None = None
    cpus_per_task: int | None = None


@dataclass
class RunSpec:
    framework: str = "demo"
    levels: list[int] = field(default_factory=lambda: [0])
    variants: list[str] = field(default_factory=list)
    model: str | None = None
    bridge_repo: str | None = None
    repo: str | None = None
    overrides: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    runs_dir: str = "runs"
    launcher: str = "local"
    slurm: SlurmOptions = field(default_factory=SlurmOptions)
    # free-form extras: "bridge_tests": [...model specific test paths], "linked_from": run id, ...
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        data = dict(data)
        slurm = SlurmOptions(**(data.pop("slurm", None) or {}))
        return cls(slurm=slurm, **{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def default_runs_dir() -> str:
    return os.environ.get("RL_CONSOLE_RUNS") or "runs"


def add_spec_arguments(p: argparse.ArgumentParser) -> None:
    """The SPEC options of DESIGN.md, shared by plan/run/doctor."""
    p.add_argument("--framework", choices=FRAMEWORKS, help="nemo-rl, verl or demo (default: demo)")
    p.add_argument("--level", dest="levels", type=int, action="append", help="coverage level (repeatable)")
    p.add_argument(
        "--variant", dest="variants", action="append", default=[], help="variant name (repeatable)"
    )
    p.add_argument("--model", help="HF model id or local path")
    p.add_argument("--bridge-repo", help="Megatron-Bridge checkout (default $BRIDGE_REPO)")
    p.add_argument("--repo", help="NeMo-RL or verl checkout (default $NEMO_RL_REPO / $VERL_REPO)")
    p.add_argument(
        "--override",
        dest="overrides",
        action="append",
        default=[],
        help="Hydra override KEY=VALUE (repeatable)",
    )
    p.add_argument("--env", dest="env", action="append", default=[], help="KEY=VALUE (repeatable)")
    p.add_argument("--runs-dir", help="run store (default $RL_CONSOLE_RUNS or ./runs)")
    p.add_argument("--launcher", choices=LAUNCHERS, default="local")
    p.add_argument("--nodes", type=int, default=1)
    p.add_argument("--partition")
    p.add_argument("--account")
    p.add_argument("--time")
    p.add_argument("--container")
    p.add_argument("--mounts", help="SRC:DST,...")
    p.add_argument("--gpus-per-node", type=int)
    p.add_argument(
        "--cpus-per-task",
        type=int,
        help="Slurm: CPUs for each step (default: the cluster's default, often 1)",
    )
    p.add_argument(
        "--hang-timeout",
        type=float,
        metavar="SECONDS",
        help="report a hang after this long without training progress (default 1800)",
    )
    p.add_argument(
        "--bridge-test",
        dest="bridge_tests",
        action="append",
        default=[],
        help="extra model-specific Bridge test path (repeatable)",
    )
    p.add_argument(
        "--allow-drift",
        action="store_true",
        help="start even when a step names a path or key the checkout lacks (catalog_drift)",
    )


def spec_from_args(args: argparse.Namespace) -> RunSpec:
    """A RunSpec from the parsed SPEC options (``add_spec_arguments``)."""
    return make_spec(vars(args))


def make_spec(options: Mapping[str, Any]) -> RunSpec:
    """The one RunSpec builder (CLI, the TUI's New run, the demo). ``options`` are the SPEC options by
    their ``add_spec_arguments`` names; a missing or empty one takes its default, the procedures'
    variables included (``$NEMO_RL_REPO``/``$VERL_REPO``, ``$BRIDGE_REPO`` unless demo,
    ``$RL_CONSOLE_RUNS``). ``env`` is a mapping or ``KEY=VALUE`` items; numbers may be text. A bad
    value is a ``SpecError`` in the CLI's flag words; the rest is the plan builder's job."""
    o = {k: v for k, v in options.items() if v is not None and v != "" and v != []}
    framework, launcher = o.get("framework", "demo"), o.get("launcher", "local")
    for flag, value, known in (("framework", framework, FRAMEWORKS), ("launcher", launcher, LAUNCHERS)):
        if value not in known:
            raise SpecError(f"--{flag} {value!r}: expected one of {', '.join(known)}")
    env = o.get("env", {})
    if not isinstance(env, Mapping):
        for item in env:
            if "=" not in item:
                raise SpecError(f"--env {item!r}: expected KEY=VALUE")
        env = dict(item.split("=", 1) for item in env)
    repo_var = {"nemo-rl": "NEMO_RL_REPO", "verl": "VERL_REPO"}.get(framework, "")
    repo = o.get("repo", os.environ.get(repo_var))
    bridge = o.get("bridge_repo", os.environ.get("BRIDGE_REPO") if framework != "demo" else None)
    extra: dict[str, Any] = {"bridge_tests": list(o["bridge_tests"])} if o.get("bridge_tests") else {}
    if o.get("allow_drift"):
        extra["allow_drift"] = True
    if "hang_timeout" in o:
        extra["hang_timeout_s"] = _number(o, "hang_timeout", float)
        if not extra["hang_timeout_s"] > 0:
            raise SpecError(f"--hang-timeout {o['hang_timeout']}: must be a positive number of seconds")
    return RunSpec(
        framework=framework,
        levels=sorted(set(o.get("levels", [0]))),
        variants=list(o.get("variants", [])),
        model=o.get("model"),
        bridge_repo=str(Path(bridge).expanduser()) if bridge else None,
        repo=str(Path(repo).expanduser()) if repo else None,
        overrides=list(o.get("overrides", [])),
        env=dict(env),
        runs_dir=o.get("runs_dir") or default_runs_dir(),
        launcher=launcher,
        slurm=SlurmOptions(
            **{k: o.get(k) for k in ("partition", "account", "time", "container")},
            nodes=_number(o, "nodes", int, 1),
            mounts=[m for m in o.get("mounts", "").split(",") if m],
            gpus_per_node=_number(o, "gpus_per_node", int),
            cpus_per_task=_number(o, "cpus_per_task", int),
        ),
        extra=extra,
    )


def _number(o: dict[str, Any], key: str, kind: type, default: Any = None) -> Any:
    try:
        return kind(o[key]) if key in o else default
    except (TypeError, ValueError):
        raise SpecError(f"--{key.replace('_', '-')} {o[key]!r}: expected a number") from None
