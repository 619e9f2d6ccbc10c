"""Local launcher: create the run folder and start its detached supervisor."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from console.errors import SpecError
from console.monitor.procs import process_create_time
from console.redact import MASK, is_secret_name, redact_argv, redact_env, redact_obj, secret_argv_positions
from console.rundir.ids import create_run_dir
from console.rundir.paths import fill_run_dir
from console.rundir.state import initial_state, update_state, write_json_atomic, write_state
from console.runs.spawn import spawn_detached
from console.spec import RunSpec

SUPERVISOR_LOG = "supervisor.log"


def plan_to_dict(plan: Any) -> dict[str, Any]:
    """A ``Plan`` (with its real values: secrets reach the supervisor over its stdin only) or a plan
    dict, checked."""
    data: dict[str, Any] = (
        plan.to_dict(redact=False)
        if hasattr(plan, "to_dict")
        else json.loads(json.dumps(dict(plan), default=str))
    )
    if not isinstance(data.get("steps"), list) or not data["steps"]:
        raise SpecError("the plan has no steps")
    names = [s.get("name") for s in data["steps"]]
    if len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
        raise SpecError(f"plan step names must be unique and non-empty: {names}")
    for step in data["steps"]:
        argv = step.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise SpecError(f"step {step['name']!r}: argv must be a non-empty list of strings")
    return data


def apply_remedy_unset(plan: dict[str, Any], spec: RunSpec) -> None:
    """A remedy's ``unset`` names reach every step (the plan builder may already have done it)."""
    unset = list((spec.extra.get("remedy") or {}).get("unset") or [])
    for step in plan["steps"]:
        have = list(step.get("unset") or [])
        step["unset"] = have + [u for u in unset if u not in have]


def _secrets(plan: dict[str, Any], base_env: dict[str, str] | None = None) -> dict[str, Any]:
    """The values plan.json shows masked, for the supervisor's stdin only: ``{"env": {step: {KEY: value}},
    "argv": {step: {index: [prefix, value]}}, "base_env": {KEY: value}}`` (the argv word is ``prefix +
    value``; ``base_env``: the submitting environment's secret-named variables, which the supervisor's
    own environment, ``/proc/<pid>/environ``, never carries)."""
    env: dict[str, dict[str, str]] = {}
    argv: dict[str, dict[str, list[str]]] = {}
    for step in plan["steps"]:
        for k, v in (step.get("env") or {}).items():
            if is_secret_name(k) and v and v != MASK:
                env.setdefault(step["name"], {})[k] = v
        for i, (prefix, value) in secret_argv_positions(step["argv"]).items():
            argv.setdefault(step["name"], {})[str(i)] = [prefix, value]
    base = {k: v for k, v in (base_env or {}).items() if is_secret_name(k) and v}
    return {"env": env, "argv": argv, "base_env": base}


def secret_list(secrets: dict[str, Any]) -> list[str]:
    """Every secret value of a ``_secrets`` payload (argv entries without their ``KEY=`` prefix)."""
    values = [v for per_step in (secrets.get("env") or {}).values() for v in per_step.values()]
    for per_step in (secrets.get("argv") or {}).values():
        values += [pair[1] for pair in per_step.values()]
    values += list((secrets.get("base_env") or {}).values())
    return [v for v in values if v]


def _redacted_plan(plan: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(plan, default=str))
    for step in out["steps"]:
        step["env"] = redact_env(step.get("env") or {})
        step["argv"] = redact_argv(step["argv"])
    if isinstance(out.get("spec"), dict):
        out["spec"]["env"] = redact_env(out["spec"].get("env") or {})
        out["spec"]["overrides"] = redact_argv(list(out["spec"].get("overrides") or []))
    return out


def supervisor_env() -> dict[str, str]:
    """The supervisor's environment: this one, without any secret-named variable."""
    return {**{k: v for k, v in os.environ.items() if not is_secret_name(k)}, "PYTHONUNBUFFERED": "1"}


def spawn_supervisor(run_dir: Path, secrets: dict[str, Any]) -> int:
    """Start ``python -m console.runs.supervisor RUN_DIR`` detached; the secrets go over its stdin
    (a pipe it reads to the end at start, then replaces with /dev/null). Returns its pid."""
    proc = spawn_detached(
        "console.runs.supervisor", run_dir, run_dir / SUPERVISOR_LOG, supervisor_env(), subprocess.PIPE
    )
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write(json.dumps(secrets).encode())
    with contextlib.suppress(OSError):
        proc.stdin.close()
    return proc.pid


def start_run(spec: RunSpec, *, plan: Any = None, runs_dir: str | Path | None = None) -> Path:
    """Create ``runs/<id>/`` (spec.json, plan.json, state.json, logs/) and start the detached
    supervisor; returns the run folder as soon as the supervisor process exists."""
    if plan is None:
        from console.plan import build_plan  # the plan builder lives in another part of the package

        plan = build_plan(spec)
    plan_dict = plan_to_dict(plan)
    apply_remedy_unset(plan_dict, spec)
    root = Path(runs_dir if runs_dir is not None else spec.runs_dir).expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise SpecError(f"runs folder {root}: not a directory")
    if spec.launcher == "slurm":  # refuse bad Slurm options (``--nodes -3``) before a run folder exists
        from console.runs.slurm.script import sbatch_resource_args

        sbatch_resource_args(spec, plan_dict["steps"], "rlc-check")
    run_dir = create_run_dir(root, spec)  # reserved (empty) under its final name
    # the files are written in a hidden staging folder renamed over the reserved one at once: a
    # console killed mid-way never leaves a visible run folder without state.json
    staging = root / f".{run_dir.name}.creating"
    try:
        plan_dict = fill_run_dir(plan_dict, run_dir)
        plan_dict["spec"] = spec.to_dict()
        secrets = _secrets(plan_dict, dict(os.environ))
        staging.mkdir()
        (staging / "logs").mkdir()
        spec_dict = spec.to_dict()
        spec_dict["env"] = redact_env(spec.env)
        spec_dict["overrides"] = redact_argv(list(spec.overrides))
        known = secret_list(secrets)  # any literal occurrence anywhere (a title, a cwd) is masked too
        write_json_atomic(staging / "spec.json", redact_obj(spec_dict, known))
        write_json_atomic(staging / "plan.json", redact_obj(_redacted_plan(plan_dict), known))
        linked = spec.extra.get("linked_from")
        write_state(staging, initial_state(run_dir.name, plan_dict["steps"], spec.launcher, linked))
        os.rename(staging, run_dir)  # replaces the empty reserved folder atomically
        if spec.launcher == "slurm":
            return _start_slurm(run_dir, plan_dict, spec)
        pid = spawn_supervisor(run_dir, secrets)
    except (SpecError, OSError):
        # bad input found late or a folder that cannot be written: leave nothing behind
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    ctime = process_create_time(pid)
    update_state(
        run_dir,
        lambda s: s.update(
            {
                "supervisor_pid": s.get("supervisor_pid") or pid,
                "supervisor_create_time": s.get("supervisor_create_time") or ctime,
            }
        ),
    )
    return run_dir


def _start_slurm(run_dir: Path, plan_dict: dict[str, Any], spec: RunSpec) -> Path:
    """Slurm launcher: sbatch the plan, keep the job id in state.json, start the detached follower."""
    from console.errors import ConsoleError
    from console.runs.slurm.backend import start_follower, submit

    try:
        job_id = submit(run_dir, plan_dict, spec)
    except ConsoleError as exc:
        why = str(exc)
        update_state(
            run_dir,
            lambda s: s.update(
                {"status": "blocked", "verdict": "Blocked", "ended": time.time(), "slurm_reason": why}
            ),
        )
        raise
    update_state(run_dir, lambda s: s.update({"slurm_job_id": job_id}))
    start_follower(run_dir)
    return run_dir
