"""Cancel: SIGINT, then SIGTERM after a grace period, then SIGKILL, to every process of a run: each
step's process group and every process ``procs`` finds (also those in a session of their own), then
``ray stop --force`` for a local Ray cluster the run started. A live supervisor does the escalation
itself (it records the outcome); ``cancel_run`` asks it through ``state.json`` and waits.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from console.monitor.procs import group_is_runs, is_run_supervisor, looks_like_ray, run_marker, run_processes
from console.rundir.model import State
from console.rundir.state import is_finished, read_state, update_state

POLL_S = 0.1


def _signal_all(pgids: set[int], procs: list[psutil.Process], sig: int) -> None:
    for pgid in pgids:
        with contextlib.suppress(OSError):
            os.killpg(pgid, sig)
    for proc in procs:
        with contextlib.suppress(psutil.Error, OSError):
            proc.send_signal(sig)


def terminate_tree(
    run_id: str, pgids: set[int], grace: float = 10.0, exclude: set[int] | frozenset[int] = frozenset()
) -> bool:
    """Escalate SIGINT -> SIGTERM -> SIGKILL until no process of the run remains; True when its tree
    held a local Ray cluster (the caller then runs ``ray stop``)."""
    saw_ray = False
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        procs = run_processes(run_id, roots=pgids, exclude=exclude)
        saw_ray = saw_ray or looks_like_ray(procs)
        live_groups = {g for g in pgids if _group_alive(g)}
        if not procs and not live_groups:
            return saw_ray
        _signal_all(live_groups, procs, sig)
        signalled = {p.pid for p in procs}
        deadline = time.monotonic() + (grace if sig != signal.SIGKILL else 5.0)
        while time.monotonic() < deadline:
            time.sleep(POLL_S)
            procs = run_processes(run_id, roots=pgids, exclude=exclude)
            if not procs and not any(_group_alive(g) for g in pgids):
                return saw_ray
            # a process of the run that appeared after the signal went out gets it too
            late = [p for p in procs if p.pid not in signalled]
            _signal_all(set(), late, sig)
            signalled |= {p.pid for p in late}
    return saw_ray


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except OSError:
        return False
    # a group of zombies only still "exists" until reaped; check a live member
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                return True
        except (OSError, psutil.Error):
            continue
    return False


def ray_command() -> str | None:
    """The ``ray`` CLI of this interpreter's environment, else the one on PATH."""
    beside = Path(sys.executable).with_name("ray")
    return str(beside) if beside.exists() else shutil.which("ray")


def stop_local_ray() -> bool:
    ray = ray_command()
    if ray is None:
        return False
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(
            [ray, "stop", "--force"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )
        return True
    return False


def running_groups(state: State, marker: str | None = None) -> set[int]:
    """Process groups of steps still marked running (an ended step's id may be another process's now);
    with ``marker`` (``run_marker(run_dir)``) only those still the run's: the leader has the create
    time recorded in state.json, or a member carries the marker (PID reuse safe)."""
    out = set()
    for s in state.get("steps", []):
        pgid = s.get("pgid")
        if (
            pgid
            and s.get("status") == "running"
            and (marker is None or group_is_runs(int(pgid), s.get("create_time"), marker))
        ):
            out.add(int(pgid))
    return out


def supervisor_alive(state: State, run_dir: Path) -> bool:
    """The run's own supervisor still runs (same pid, same create time, its command names the run)."""
    return is_run_supervisor(state.get("supervisor_pid"), state.get("supervisor_create_time"), run_dir)


def cancel_run(run_dir: Path, grace: float = 10.0) -> bool:
    """Stop a run and its whole process tree (after it, none remains and ``state.json`` says
    ``cancelled``); False when the run had already ended."""
    run_dir = Path(run_dir)
    state = read_state(run_dir)
    if is_finished(state):
        return False

    def ask(s: State) -> None:
        s["cancel_requested"] = True
        s["cancel_grace"] = grace

    state = update_state(run_dir, ask)
    if state.get("launcher") == "slurm":
        return _cancel_slurm(run_dir, grace)
    sup = state.get("supervisor_pid")
    # the supervisor escalates by itself; give it the three grace periods plus slack
    deadline = time.monotonic() + 3 * grace + 15.0
    while supervisor_alive(state, run_dir) and time.monotonic() < deadline:
        if is_finished(read_state(run_dir)):
            break
        time.sleep(POLL_S)
    # whatever is left (dead or stuck supervisor): do it here
    state = read_state(run_dir)
    if supervisor_alive(state, run_dir) and not is_finished(state):
        with contextlib.suppress(psutil.Error):
            psutil.Process(sup).kill()
    saw_ray = terminate_tree(run_marker(run_dir), running_groups(state, run_marker(run_dir)), grace)
    if saw_ray:
        stop_local_ray()
    if not is_finished(read_state(run_dir)):
        update_state(run_dir, mark_cancelled)
    return True


def mark_cancelled(state: State, reason: str = "run cancelled") -> None:
    now = time.time()
    for step in state.get("steps", []):
        if step["status"] == "running":
            step["status"] = "cancelled"
            step["ended"] = step.get("ended") or now
        elif step["status"] == "pending":
            step["status"] = "skipped"
            step["reason"] = reason
    state.update({"status": "cancelled", "verdict": "Cancelled", "ended": state.get("ended") or now})


def _cancel_slurm(run_dir: Path, grace: float) -> bool:
    """``scancel`` the run's job, then wait for the follower (or follow here) to record the end."""
    from console.runs.slurm.backend import cancel_run as cancel_slurm_run
    from console.runs.slurm.backend import follow, follower_running

    cancel_slurm_run(run_dir)
    deadline = time.monotonic() + 3 * grace + 15.0
    if not follower_running(run_dir):
        follow(run_dir, poll_s=0.5, max_s=3 * grace + 15.0)
    while not is_finished(read_state(run_dir)) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    if not is_finished(read_state(run_dir)):
        update_state(run_dir, mark_cancelled)
    return True
