"""Which processes belong to a run: the launched process trees, plus processes carrying a
marker environment variable (Ray workers of an external cluster are not our descendants)."""

from __future__ import annotations

from collections.abc import Iterable

import psutil


def run_process_tree(
    root_pids: Iterable[int],
    marker_env: str | None = None,
    candidates: Iterable[int] | None = None,
) -> set[int]:
    """PIDs of ``root_pids`` and all their descendants.

    With ``marker_env`` (``"NAME=value"`` or just ``"NAME"``), processes among ``candidates``
    (default: every process; reading environments is slow, so pass e.g. the GPU's PIDs) whose
    environment carries the marker count too, with their descendants.
    """
    pids: set[int] = set()
    for pid in root_pids:
        pids |= _tree(pid)
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
    try:
        env = psutil.Process(pid).environ()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError, ValueError):
        return False
    if name not in env:
        return False
    return not sep or env[name] == value


def process_name(pid: int) -> str:
    try:
        return psutil.Process(pid).name()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ValueError):
        return "?"
