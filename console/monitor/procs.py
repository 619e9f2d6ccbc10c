"""Which processes belong to a run, and whether a recorded process is still the one it was.

Each step runs with ``RL_CONSOLE_RUN_ID=<absolute run folder>`` in its environment; children inherit
it, so a process that left the step's group (``setsid``, daemonised Ray workers) is still found
through ``/proc/<pid>/environ``; psutil descendants of known pids cover those that cleared their env.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

import psutil

RUN_ID_ENV = "RL_CONSOLE_RUN_ID"
RAY_PROCESS_NAMES = ("raylet", "gcs_server", "ray::", "plasma_store", "dashboard", "redis-server")


def run_process_tree(
    root_pids: Iterable[int],
    marker_env: str | None = None,
    candidates: Iterable[int] | None = None,
) -> set[int]:
    """PIDs of ``root_pids`` and their descendants; with ``marker_env`` (``"NAME=value"`` or ``"NAME"``)
    also the processes among ``candidates`` (default: all; reading environments is slow, so pass e.g.
    the GPU's PIDs) whose environment carries it, with their descendants."""
    pids: set[int] = set().union(*(_tree(pid) for pid in root_pids))
    if marker_env:
        pool = list(candidates) if candidates is not None else psutil.pids()
        for pid in pool:
            if pid not in pids and has_marker(pid, marker_env):
                pids |= _tree(pid)
    return pids


def _tree(pid: int) -> set[int]:
    try:
        proc = psutil.Process(pid)
        kids = proc.children(recursive=True)
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ValueError):
        return set()
    return {pid} | {k.pid for k in kids}


def has_marker(pid: int, marker_env: str) -> bool:
    name, sep, value = marker_env.partition("=")
    found = process_env(pid, name)
    return found is not None and (not sep or found == value)


def process_name(pid: int) -> str:
    try:
        return psutil.Process(pid).name()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ValueError):
        return "?"


def process_env(pid: int, name: str) -> str | None:
    try:
        return psutil.Process(pid).environ().get(name)
    except (psutil.Error, OSError, ValueError):
        return None


def run_marker(run_dir: str | os.PathLike[str]) -> str:
    """The value of ``RL_CONSOLE_RUN_ID`` a run's steps carry: its absolute folder, not the bare id (two
    runs folders can hold the same id, and a cancel in one must never touch the other)."""
    return os.path.realpath(run_dir)


def run_processes(
    run_id: str, roots: Iterable[int] = (), exclude: Iterable[int] = ()
) -> list[psutil.Process]:
    """Live processes of the run: ``roots`` and every process carrying the marker ``run_id``, with their
    descendants; never ``exclude``, this process or its ancestors."""
    skip = set(exclude) | {os.getpid()}
    with contextlib.suppress(psutil.Error):
        skip |= {p.pid for p in psutil.Process().parents()}
    found: list[psutil.Process] = []
    for pid in run_process_tree(roots, marker_env=f"{RUN_ID_ENV}={run_id}") - skip:
        try:
            proc = psutil.Process(pid)
            if proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def looks_like_ray(procs: Iterable[psutil.Process]) -> bool:
    """True when the run's tree holds a local Ray cluster (raylet, GCS server, workers)."""
    for proc in procs:
        try:
            name = proc.name()
            cmd = " ".join(proc.cmdline()[:3])
        except psutil.Error:
            continue
        if name.startswith(RAY_PROCESS_NAMES) or any(
            w in cmd for w in ("ray/core/src", "gcs_server", "raylet")
        ):
            return True
    return False


def process_create_time(pid: int | None) -> float | None:
    """psutil's create time of ``pid`` (None when it does not exist): with the pid, the identity of a
    process that survives PID reuse."""
    if not pid:
        return None
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def same_process(pid: int | None, create_time: float | None) -> bool:
    """True when ``pid`` is alive (not a zombie) and, when ``create_time`` was recorded, is the very
    process that had it (not a later process that reused the pid)."""
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return create_time is None or abs(proc.create_time() - float(create_time)) < 0.05
    except (psutil.Error, TypeError, ValueError):
        return False


def is_run_supervisor(pid: int | None, create_time: float | None, run_dir: str | os.PathLike[str]) -> bool:
    """True when ``pid`` is the supervisor of ``run_dir``: same create time and its command line
    names ``console.runs.supervisor`` and this run folder (the run marker)."""
    if not same_process(pid, create_time):
        return False
    try:
        cmd = psutil.Process(pid).cmdline()
    except psutil.Error:
        return False
    if "console.runs.supervisor" not in cmd:
        return create_time is not None  # the launcher's fork before exec: identity by create time only
    return any(
        os.path.realpath(a) == run_marker(run_dir) for a in cmd[cmd.index("console.runs.supervisor") + 1 :]
    )


def group_is_runs(pgid: int, create_time: float | None, marker: str) -> bool:
    """Is process group ``pgid`` still the run's step group? Its leader (pid == pgid) must have the
    recorded create time; when the leader is gone, a member must carry the run marker (a group id is
    not reused while any member lives)."""
    try:
        leader = psutil.Process(pgid)
        if leader.status() != psutil.STATUS_ZOMBIE:
            return create_time is None or abs(leader.create_time() - float(create_time)) < 0.05
    except psutil.Error:
        pass
    want = f"{RUN_ID_ENV}={marker}"
    for pid in psutil.pids():
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pgid and has_marker(pid, want):
                return True
    return False
