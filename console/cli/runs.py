"""CLI handlers for runs: ``run``, ``ls``, ``show``, ``attach``, ``cancel``, ``demo``, ``replay``."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from console import exitcodes
from console.doctor.model import DoctorResult
from console.errors import ConsoleError, SpecError
from console.fileio import runs_folder_problem
from console.rundir.state import is_finished, read_state
from console.runs.cancel import cancel_run
from console.runs.follow import follow_run
from console.runs.launch import start_run
from console.runs.recover import current_state
from console.runs.store import RunStore, runs_dir_from
from console.spec import RunSpec, make_spec, spec_from_args


def _runs_dir(args: argparse.Namespace) -> Path:
    return runs_dir_from(getattr(args, "runs_dir", None))


def _watch(run_dir: Path, runs_dir: Path, headless: bool) -> int:
    """Follow a run: the TUI's monitor when it is there and not ``headless``; else headless lines."""
    if not headless:
        from console.tui.launch import open_run

        open_run(run_dir, runs_dir)
        state = current_state(run_dir)  # DETACHED when the console left a run that goes on
        return exitcodes.for_verdict(state.get("verdict")) if is_finished(state) else exitcodes.DETACHED
    try:
        return follow_run(run_dir)
    except KeyboardInterrupt:
        # not 130 (= cancelled): the run was not stopped, only this console left it
        print(
            f"\ndetached (exit {exitcodes.DETACHED}); the run goes on. Reattach: rl-console attach "
            f"{run_dir.name}; stop it: rl-console cancel {run_dir.name}",
            file=sys.stderr,
        )
        return exitcodes.DETACHED


def _doctor(spec: RunSpec, plan: Any) -> DoctorResult:
    from console.doctor.preflight import blocks, preflight

    result = preflight(spec, plan, None)
    if blocks(result):
        for check in result.get("checks", []):
            if check.get("status") == "block":
                print(f"doctor: {check.get('id')}: {check.get('evidence')}", file=sys.stderr)
                if check.get("advice"):
                    print(f"  advice: {check['advice']}", file=sys.stderr)
        raise _Blocked("preflight checks block this run (rerun with --no-doctor to start anyway)")
    return result


class _Blocked(ConsoleError):
    exit_code = exitcodes.BLOCKED


def _check_runs_folder(runs_dir: str | Path) -> None:
    why = runs_folder_problem(Path(runs_dir))
    if why is not None:
        raise SpecError(f"runs folder {runs_dir} cannot be written: {why} (pass --runs-dir)")


def _start(spec: RunSpec, args: argparse.Namespace, plan: Any = None, doctor: bool = True) -> Path:
    _check_runs_folder(spec.runs_dir)
    if plan is None:
        from console.plan import build_plan

        plan = build_plan(spec)
    drift = list(getattr(plan, "drift", None) or [])
    if drift and not spec.extra.get("allow_drift"):
        for d in drift:
            print(f"catalog_drift: {d.get('message')}", file=sys.stderr)
        raise _Blocked(
            f"{len(drift)} catalog drift finding(s): the plan does not match the checkouts "
            "(rerun with --allow-drift to start anyway)"
        )
    result = _doctor(spec, plan) if doctor and not getattr(args, "no_doctor", False) else None
    run_dir = start_run(spec, plan=plan)
    if result is not None:
        from console.doctor.preflight import write_doctor_json

        with contextlib.suppress(OSError):
            write_doctor_json(run_dir, result)
    return run_dir


def cmd_run(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    if getattr(args, "baseline", None):  # the same plan twice, Bridge at REF then as is, then compared
        from console.compare.baseline import run_with_baseline

        return run_with_baseline(spec, args, _start)
    run_dir = _start(spec, args)
    print(f"run {run_dir.name} started: {run_dir}", file=sys.stderr if not args.detach else sys.stdout)
    if args.detach:
        return exitcodes.PASS
    return _watch(run_dir, Path(spec.runs_dir), args.headless)


def cmd_demo(args: argparse.Namespace) -> int:
    from console.plan import build_plan

    spec = make_spec({"framework": "demo", "variants": args.variants, "runs_dir": str(_runs_dir(args))})
    if args.device:
        if args.device not in ("auto", "cpu", "cuda"):
            raise SpecError(f"--device {args.device!r}: expected cpu, cuda or auto")
        spec.extra["device"] = args.device
    plan = build_plan(spec)
    if args.device:
        for step in plan.steps:
            if "console.demo.grpo" in step.argv and "--device" not in step.argv:
                step.argv += ["--device", args.device]
    run_dir = _start(spec, args, plan=plan, doctor=False)
    print(f"demo run {run_dir.name} started: {run_dir}", file=sys.stderr)
    return _watch(run_dir, _runs_dir(args), args.headless)


def cmd_ls(args: argparse.Namespace) -> int:
    if _runs_dir(args).exists() and not _runs_dir(args).is_dir():
        raise SpecError(f"runs folder {_runs_dir(args)}: not a directory")
    rows = RunStore(_runs_dir(args)).list()
    if args.json:
        print(json.dumps(rows, indent=2))
        return exitcodes.PASS
    if not rows:
        print(f"no runs in {_runs_dir(args)}")
        return exitcodes.PASS
    width = max(len(r["id"]) for r in rows)
    print(f"{'RUN':<{width}}  {'STATUS':<9}  {'VERDICT':<10}  {'STEPS':<5}  STEP")
    for r in rows:
        note = f"  ({r['error']})" if r.get("error") else ""
        print(
            f"{r['id']:<{width}}  {r['status'] or '-':<9}  {r['verdict'] or '-':<10}  "
            f"{r['progress']:<5}  {r['step'] or '-'}{note}"
        )
    return exitcodes.PASS


def _age(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


def cmd_show(args: argparse.Namespace) -> int:
    data = RunStore(_runs_dir(args)).load(args.run)
    if args.json:
        print(json.dumps(data, indent=2, default=str))
        return exitcodes.PASS
    state = data["state"]
    print(f"run      {data['id']}")
    print(f"folder   {data['path']}")
    print(f"status   {state.get('status')}   verdict {state.get('verdict') or '-'}")
    print(f"started  {_age(state.get('started'))}   ended {_age(state.get('ended'))}")
    if state.get("error"):
        print(f"error    {state['error']}")
    if state.get("linked_from"):
        print(f"rerun of {state['linked_from']}")
    for key, label in (("baseline_run", "baseline"), ("candidate_run", "candidate")):  # run --baseline
        if state.get(key):
            print(f"{label:<8} {state[key]}  (rl-console compare)")
    for i, step in enumerate(state.get("steps", []), 1):
        code = step.get("exit_code")
        extra = f"  exit {code}" if code is not None else ""
        reason = f"  ({step['reason']})" if step.get("reason") else ""
        print(f"  {i:02d} {step['name']:<28} {step['status']:<9}{extra}{reason}")
    primary = (data.get("triage") or {}).get("primary") or {}
    if primary.get("class"):
        print(f"primary  {primary['class']}: {str(primary.get('evidence', '')).strip()[:160]}")
        if primary.get("advice"):
            print(f"advice   {primary['advice']}")
    return exitcodes.PASS


def cmd_attach(args: argparse.Namespace) -> int:
    runs_dir = _runs_dir(args)
    run_dir = RunStore(runs_dir).resolve(args.run)
    return _watch(run_dir, runs_dir, args.headless)


def cmd_cancel(args: argparse.Namespace) -> int:
    run_dir = RunStore(_runs_dir(args)).resolve(args.run)
    if args.grace < 0:
        raise SpecError("--grace must be >= 0")
    if not cancel_run(run_dir, grace=args.grace):
        state = read_state(run_dir)
        print(f"run {run_dir.name} already ended ({state.get('status')}, verdict {state.get('verdict')})")
        return exitcodes.PASS
    print(f"run {run_dir.name} cancelled; no process of it remains")
    return exitcodes.PASS


def cmd_replay(args: argparse.Namespace) -> int:
    from console.runs.replay import start_replay

    if args.speed <= 0:
        raise SpecError("--speed must be > 0")
    _check_runs_folder(_runs_dir(args))
    run_dir = start_replay(
        Path(args.log), speed=args.speed, framework=args.framework, runs_dir=_runs_dir(args)
    )
    print(f"replay run {run_dir.name} started: {run_dir}", file=sys.stderr if not args.detach else sys.stdout)
    if args.detach:
        return exitcodes.PASS
    return _watch(run_dir, _runs_dir(args), args.headless)
