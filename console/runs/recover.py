"""Runs whose supervisor vanished (killed, machine rebooted): settle their state from the run folder."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from console.runs.cancel import running_groups
from console.runs.procs import alive, run_marker, run_processes
from console.runs.state import is_finished, read_state, update_state
from console.runs.stepwrap import read_exit


def supervisor_lost(state: dict[str, Any]) -> bool:
    """True when the run is not finished, its supervisor is gone and it was started long enough ago."""
    if is_finished(state) or state.get("launcher", "local") != "local":
        return False
    pid = state.get("supervisor_pid")
    started = state.get("started") or state.get("created") or 0
    return not alive(pid) and time.time() - started > 2.0


def settle_lost_run(run_dir: Path) -> bool:
    """Record exit codes from the ``.exit`` files and end the run as Incomplete once nothing of it runs.

    Returns True when the state was settled.
    """
    run_dir = Path(run_dir)
    state = read_state(run_dir)
    if not supervisor_lost(state):
        return False
    if run_processes(run_marker(run_dir), roots=running_groups(state)):
        return False  # a step still runs on its own; its wrapper will record the exit code

    def settle(s: dict[str, Any]) -> None:
        if is_finished(s):
            return
        now = time.time()
        for step in s["steps"]:
            code = read_exit(run_dir / step["log"].replace(".log", ".exit")) if step.get("log") else None
            if step["status"] == "running":
                step.update(exit_code=code, ended=step.get("ended") or now,
                            status="passed" if code == 0 else "failed")
            elif step["status"] == "pending":
                step.update(status="skipped", reason="supervisor lost")
        s.update(status="failed", verdict="Incomplete", ended=now, error="supervisor lost")

    update_state(run_dir, settle)
    return True
