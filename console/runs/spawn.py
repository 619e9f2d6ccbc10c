"""Detached child processes of a run: the local supervisor and the Slurm follower."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def spawn_detached(
    module: str, run_dir: Path, log: Path, env: dict[str, str], stdin: int = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    """``python -m MODULE RUN_DIR`` in its own session, its output appended to ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", module, str(run_dir)],
            stdin=stdin,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env=env,
        )
