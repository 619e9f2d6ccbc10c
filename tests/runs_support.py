"""Helpers shared by the run tests (real processes, temporary run folders)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from console.monitor.procs import run_processes
from console.rundir.state import is_finished, read_state
from console.runs.cancel import running_groups

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent


def step(name: str, code: str, **kw: Any) -> dict[str, Any]:
    return {"name": name, "argv": [PY, "-u", "-c", code], "env": {}, "cwd": None, **kw}


def wait_finished(run_dir: Path, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = read_state(run_dir)
        if is_finished(state):
            return state
        time.sleep(0.1)
    raise AssertionError(f"run {run_dir.name} did not finish in {timeout}s: {read_state(run_dir)}")


def wait_for(pred, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def takes_ctrl_c() -> None:
    """``preexec_fn`` of a console that a test interrupts with SIGINT: take it as a terminal's Ctrl-C
    would be taken. A CI shell that starts the suite in the background leaves SIGINT ignored, and a
    child that starts with it ignored never sees the KeyboardInterrupt the test is about."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120.0) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [PY, "-m", "console", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
    )


def reap_runs(runs_dir: Path) -> list[int]:
    """Kill whatever a test's runs left behind; return the pids that had survived (should be none)."""
    survivors: list[int] = []
    if not runs_dir.is_dir():
        return survivors
    for run_dir in runs_dir.iterdir():
        if not (run_dir / "state.json").exists():
            continue
        state = read_state(run_dir)
        procs = run_processes(state["id"], roots=running_groups(state))
        sup = state.get("supervisor_pid")
        with contextlib.suppress(psutil.Error):
            if sup and psutil.Process(sup).status() != psutil.STATUS_ZOMBIE and not is_finished(state):
                procs.append(psutil.Process(sup))
        for proc in procs:
            survivors.append(proc.pid)
            with contextlib.suppress(psutil.Error):
                proc.kill()
    return survivors
