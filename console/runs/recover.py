"""Runs whose supervisor vanished (OOM-killed, SIGKILLed, node rebooted): settle them from the run folder.

Every reader of a run goes through ``current_state``: once the supervisor is gone (pid, create time
and command line: PID reuse safe) and no process of the run remains, the run ends ``Incomplete``
(``error: "supervisor lost"``) with its steps' exit codes from their ``.exit`` files, their
evidence copied and ``triage.json`` written, once.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from console.monitor.procs import run_marker, run_processes
from console.rundir.model import State
from console.rundir.state import is_finished, read_state, update_state
from console.runs.cancel import running_groups, supervisor_alive
from console.runs.stepwrap import read_exit

LOST_REASON = "supervisor lost"
START_GRACE_S = 5.0  # a run younger than this may not have recorded its supervisor yet
RECHECK_S = 3.0  # a lost run whose step still runs is scanned for again after this long
_STILL_RUNNING: dict[str, float] = {}


def supervisor_lost(state: State, run_dir: Path) -> bool:
    """True when the run is not finished and its supervisor is gone: the recorded one is no longer
    the same process, or none was recorded ``START_GRACE_S`` after the run was created (the console
    that launched it died first)."""
    if is_finished(state) or state.get("launcher", "local") != "local":
        return False
    if not state.get("supervisor_pid"):
        return time.time() - float(state.get("created") or 0) > START_GRACE_S
    return not supervisor_alive(state, Path(run_dir))


def settle_lost_run(run_dir: Path) -> bool:
    """Record exit codes from the ``.exit`` files and end the run Incomplete once nothing of it runs;
    True when the state was settled."""
    run_dir = Path(run_dir)
    state = read_state(run_dir)
    if not supervisor_lost(state, run_dir):
        return False
    marker = run_marker(run_dir)
    checked = _STILL_RUNNING.get(marker)
    if checked is not None and time.monotonic() - checked < RECHECK_S:
        return False  # looked a moment ago: a step still ran (a /proc scan per view refresh is too much)
    if run_processes(marker, roots=running_groups(state, marker)):
        _STILL_RUNNING[marker] = time.monotonic()
        return False  # a step still runs on its own; its wrapper will record the exit code
    _STILL_RUNNING.pop(marker, None)
    from console.fileio import read_json
    from console.runs.finalize import collect_evidence, free_reserve, record_verdict

    plan_steps = (read_json(run_dir / "plan.json", {}) or {}).get("steps") or []
    settled = False

    def settle(s: State) -> None:
        nonlocal settled
        if is_finished(s) or not supervisor_lost(s, run_dir):
            return
        now = time.time()
        for i, step in enumerate(s["steps"]):
            code = read_exit(run_dir / step["log"].replace(".log", ".exit")) if step.get("log") else None
            if step["status"] == "running":
                step.update(
                    {
                        "exit_code": code,
                        "ended": step.get("ended") or now,
                        "status": "passed" if code == 0 else "failed",
                        "reason": None if code == 0 else f"{LOST_REASON} while the step ran",
                    }
                )
            elif step["status"] == "pending":
                step.update({"status": "skipped", "reason": LOST_REASON})
            if (
                step["status"] in ("passed", "failed")
                and "evidence" not in step
                and step.get("started")
                and i < len(plan_steps)
            ):
                with contextlib.suppress(Exception):
                    step["evidence"] = collect_evidence(
                        run_dir,
                        i,
                        plan_steps[i],
                        since=step.get("started"),
                        before=step.get("evidence_before"),
                    )
        s.update({"status": "failed", "verdict": "Incomplete", "ended": now, "error": LOST_REASON})
        settled = True

    update_state(run_dir, settle)
    if settled:
        free_reserve(run_dir)
        with contextlib.suppress(Exception):
            record_verdict(run_dir, "Incomplete", reason=LOST_REASON)
    return settled


def current_state(run_dir: Path) -> State:
    """``state.json`` as every view must show it: a run whose supervisor is lost is settled first."""
    run_dir = Path(run_dir)
    state = read_state(run_dir)
    if not is_finished(state) and supervisor_lost(state, run_dir):
        with contextlib.suppress(OSError, ValueError):
            if settle_lost_run(run_dir):
                state = read_state(run_dir)
    return state


def read_current_state(run_dir: Path) -> State | None:
    """``current_state`` for tolerant readers (the TUI): None when the folder holds no readable state."""
    try:
        return current_state(run_dir)
    except (OSError, ValueError):
        return None
