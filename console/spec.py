"""The run spec: what the user asked for. Shared by plan, runs, doctor, TUI and CLI."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
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
    """A RunSpec from the parsed SPEC options (``add_spec_arguments``): ``make_spec`` does the rest."""
    env: dict[str, str] = {}
    for item in args.env or []:
        if "=" not in item:
            raise SpecError(f"--env {item!r}: expected KEY=VALUE")
        key, value = item.split("=", 1)
        env[key] = value
    return make_spec(env=env, **{name: getattr(args, name, None) for name in _OPTIONS})


SLURM_FIELDS = (
    "nodes",
    "partition",
    "account",
    "time",
    "container",
    "mounts",
    "gpus_per_node",
    "cpus_per_task",
)
_OPTIONS = (*SLURM_FIELDS, "framework", "levels", "variants", "model", "bridge_repo", "repo", "overrides")
_OPTIONS += ("runs_dir", "launcher", "hang_timeout", "bridge_tests", "allow_drift")


def _whole(value: Any, flag: str, default: int | None = None) -> Any:
    if value is None or value == "":
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise SpecError(f"{flag} {value!r}: expected a whole number") from None


def make_spec(
    framework: str | None = None,
    *,
    levels: Iterable[int] | None = None,
    variants: Iterable[str] | None = None,
    model: str | None = None,
    bridge_repo: str | None = None,
    repo: str | None = None,
    overrides: Iterable[str] | None = None,
    env: dict[str, str] | None = None,
    runs_dir: str | None = None,
    launcher: str | None = None,
    nodes: int | str | None = None,
    partition: str | None = None,
    account: str | None = None,
    time: str | None = None,
    container: str | None = None,
    mounts: str | None = None,
    gpus_per_node: int | str | None = None,
    cpus_per_task: int | str | None = None,
    hang_timeout: float | str | None = None,
    bridge_tests: Iterable[str] | None = None,
    allow_drift: bool | None = False,
) -> RunSpec:
    """The one RunSpec builder (CLI options, the TUI's New run, the demo): the procedures' env
    variables as defaults (``$NEMO_RL_REPO``/``$VERL_REPO``, ``$BRIDGE_REPO`` unless demo,
    ``$RL_CONSOLE_RUNS``), paths expanded, Slurm options, hang timeout and Bridge tests checked; a
    ``SpecError`` in the CLI's flag words when a value is bad. Validation beyond syntax is the plan
    builder's job (console.plan.build_plan)."""
    framework = framework or "demo"
    launcher = launcher or "local"
    if framework not in FRAMEWORKS:
        raise SpecError(f"--framework {framework!r}: expected one of {', '.join(FRAMEWORKS)}")
    if launcher not in LAUNCHERS:
        raise SpecError(f"--launcher {launcher!r}: expected one of {', '.join(LAUNCHERS)}")
    if repo is None and framework in ("nemo-rl", "verl"):
        repo = os.environ.get("NEMO_RL_REPO" if framework == "nemo-rl" else "VERL_REPO")
    bridge = bridge_repo or (os.environ.get("BRIDGE_REPO") if framework != "demo" else None)
    extra: dict[str, Any] = {}
    if bridge_tests:
        extra["bridge_tests"] = list(bridge_tests)
    if allow_drift:
        extra["allow_drift"] = True
    if hang_timeout is not None and hang_timeout != "":
        try:
            hang = float(hang_timeout)
        except ValueError:
            hang = -1.0
        if not hang > 0:
            raise SpecError(f"--hang-timeout {hang_timeout}: must be a positive number of seconds")
        extra["hang_timeout_s"] = hang
    return RunSpec(
        framework=framework,
        levels=sorted(set(levels)) if levels else [0],
        variants=list(variants or []),
        model=model,
        bridge_repo=str(Path(bridge).expanduser()) if bridge else None,
        repo=str(Path(repo).expanduser()) if repo else None,
        overrides=list(overrides or []),
        env=dict(env or {}),
        runs_dir=runs_dir or default_runs_dir(),
        launcher=launcher,
        slurm=SlurmOptions(
            nodes=_whole(nodes, "--nodes", default=1),
            partition=partition or None,
            account=account or None,
            time=time or None,
            container=container or None,
            mounts=[m for m in (mounts or "").split(",") if m],
            gpus_per_node=_whole(gpus_per_node, "--gpus-per-node"),
            cpus_per_task=_whole(cpus_per_task, "--cpus-per-task"),
        ),
        extra=extra,
    )
