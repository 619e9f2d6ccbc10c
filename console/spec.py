"""The run spec: what the user asked for. Shared by plan, runs, doctor, TUI and CLI."""

from __future__ import annotations

import argparse
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

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
        known = {f for f in cls.__dataclass_fields__}
        kwargs = {k: v for k, v in data.items() if k in known}
        return cls(slurm=slurm, **kwargs)


def default_runs_dir() -> str:
    return os.environ.get("RL_CONSOLE_RUNS") or "runs"


def add_spec_arguments(p: argparse.ArgumentParser) -> None:
    """The SPEC options of DESIGN.md, shared by plan/run/doctor."""
    p.add_argument(
        "--framework", choices=FRAMEWORKS, default=None, help="nemo-rl, verl or demo (default: demo)"
    )
    p.add_argument(
        "--level", dest="levels", type=int, action="append", default=None, help="coverage level (repeatable)"
    )
    p.add_argument(
        "--variant", dest="variants", action="append", default=[], help="variant name (repeatable)"
    )
    p.add_argument("--model", default=None, help="HF model id or local path")
    p.add_argument("--bridge-repo", default=None, help="Megatron-Bridge checkout (default $BRIDGE_REPO)")
    p.add_argument(
        "--repo", default=None, help="NeMo-RL or verl checkout (default $NEMO_RL_REPO / $VERL_REPO)"
    )
    p.add_argument(
        "--override",
        dest="overrides",
        action="append",
        default=[],
        help="Hydra override KEY=VALUE (repeatable)",
    )
    p.add_argument("--env", dest="env", action="append", default=[], help="KEY=VALUE (repeatable)")
    p.add_argument("--runs-dir", default=None, help="run store (default $RL_CONSOLE_RUNS or ./runs)")
    p.add_argument("--launcher", choices=LAUNCHERS, default="local")
    p.add_argument("--nodes", type=int, default=1)
    p.add_argument("--partition", default=None)
    p.add_argument("--account", default=None)
    p.add_argument("--time", default=None)
    p.add_argument("--container", default=None)
    p.add_argument("--mounts", default=None, help="SRC:DST,...")
    p.add_argument("--gpus-per-node", type=int, default=None)
    p.add_argument(
        "--cpus-per-task",
        type=int,
        default=None,
        help="Slurm: CPUs for each step (default: the cluster's default, often 1)",
    )
    p.add_argument(
        "--hang-timeout",
        type=float,
        default=None,
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
    """Build a RunSpec from parsed CLI args, honouring the procedures' env variables as defaults.

    Validation beyond syntax is the plan builder's job (console.plan.build_plan).
    """
    from console.errors import SpecError

    framework = args.framework or "demo"
    env: dict[str, str] = {}
    for item in args.env or []:
        if "=" not in item:
            raise SpecError(f"--env {item!r}: expected KEY=VALUE")
        key, value = item.split("=", 1)
        env[key] = value
    repo = args.repo
    if repo is None:
        if framework == "nemo-rl":
            repo = os.environ.get("NEMO_RL_REPO")
        elif framework == "verl":
            repo = os.environ.get("VERL_REPO")
    bridge = args.bridge_repo or (os.environ.get("BRIDGE_REPO") if framework != "demo" else None)
    mounts = [m for m in (args.mounts or "").split(",") if m]
    extra: dict[str, Any] = {}
    if getattr(args, "bridge_tests", None):
        extra["bridge_tests"] = list(args.bridge_tests)
    if getattr(args, "allow_drift", False):
        extra["allow_drift"] = True
    hang = getattr(args, "hang_timeout", None)
    if hang is not None:
        if hang <= 0:
            raise SpecError(f"--hang-timeout {hang}: must be a positive number of seconds")
        extra["hang_timeout_s"] = float(hang)
    return RunSpec(
        framework=framework,
        levels=sorted(set(args.levels)) if args.levels else [0],
        variants=list(args.variants or []),
        model=args.model,
        bridge_repo=str(Path(bridge).expanduser()) if bridge else None,
        repo=str(Path(repo).expanduser()) if repo else None,
        overrides=list(args.overrides or []),
        env=env,
        runs_dir=args.runs_dir or default_runs_dir(),
        launcher=args.launcher,
        slurm=SlurmOptions(
            nodes=args.nodes,
            partition=args.partition,
            account=args.account,
            time=args.time,
            container=args.container,
            mounts=mounts,
            gpus_per_node=args.gpus_per_node,
            cpus_per_task=getattr(args, "cpus_per_task", None),
        ),
        extra=extra,
    )
