"""``state.json``: written atomically (tmp + fsync + rename) under an exclusive lock on ``.lock``
(``flock``, or an O_EXCL lock file where the filesystem has none: console.rundir.lockfile).

Readers never lock: rename makes every read see a whole file. Writers serialise through
``update_state`` so two consoles and the supervisor never lose each other's changes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from console.fileio import write_json_atomic
from console.rundir.lockfile import exclusive
from console.rundir.model import State, StepState

__all__ = ["State", "StepState", "write_json_atomic"]  # write_json_atomic: also imported from here

STATE = "state.json"
LOCK = ".lock"
TERMINAL = ("passed", "failed", "blocked", "cancelled")
STEP_TERMINAL = ("passed", "failed", "skipped", "cancelled")
STATUS_BY_VERDICT = {
    "Pass": "passed",
    "Fail": "failed",
    "Blocked": "blocked",
    "Cancelled": "cancelled",
    "Incomplete": "failed",
}


def step_log_name(index: int, name: str) -> str:
    """``logs/NN-<step>.log`` (1-based NN)."""
    return f"logs/{index + 1:02d}-{name}.log"


def initial_state(
    run_id: str, steps: Sequence[Mapping[str, Any]], launcher: str = "local", linked_from: str | None = None
) -> State:
    return {
        "id": run_id,
        "status": "pending",
        "verdict": None,
        "launcher": launcher,
        "supervisor_pid": None,
        "slurm_job_id": None,
        "created": time.time(),
        "started": None,
        "ended": None,
        "current_step": 0,
        "cancel_requested": False,
        "linked_from": linked_from,
        "steps": [
            {
                "name": s["name"],
                "status": "pending",
                "pid": None,
                "pgid": None,
                "exit_code": None,
                "started": None,
                "ended": None,
                "log": step_log_name(i, s["name"]),
                "reason": None,
            }
            for i, s in enumerate(steps)
        ],
    }


def read_state(run_dir: Path) -> State:
    """The current state (raises FileNotFoundError when the folder holds none)."""
    with open(run_dir / STATE, encoding="utf-8") as fh:
        state: State = json.load(fh)
    return state


def write_state(run_dir: Path, state: State) -> None:
    with exclusive(run_dir / LOCK):
        write_json_atomic(run_dir / STATE, state)


def update_state(run_dir: Path, change: Callable[[State], object]) -> State:
    """Read-modify-write under the lock; ``change`` edits the dict in place. Returns the new state."""
    with exclusive(run_dir / LOCK):
        state = read_state(run_dir)
        change(state)
        write_json_atomic(run_dir / STATE, state)
        return state


def is_finished(state: Mapping[str, Any]) -> bool:
    return state.get("status") in TERMINAL
