"""What only the Slurm job state knew, laid over a verdict recomputed from the run folder.

``report``, ``show`` and the console recompute the verdict from the logs (``run_verdict``); for a
Slurm run the follower also knew the job state (NODE_FAIL, PREEMPTED, TIMEOUT, a PENDING reason
that never clears) and srun's launch failures, and wrote the result to ``triage.json`` (with its
``slurm`` block). ``with_job_state`` brings that back, so every view says the same verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from console.fileio import read_json


def with_job_state(run_dir: Path, verdict: dict[str, Any]) -> dict[str, Any]:
    """``verdict`` (run_verdict's dict) with the follower's job-state decision, for a finished Slurm
    run whose primary cause only the scheduler could show; any other run's verdict unchanged."""
    state = read_json(Path(run_dir) / "state.json", {}) or {}
    if state.get("launcher") != "slurm" or state.get("verdict") not in ("Blocked", "Fail"):
        return verdict
    tri = read_json(Path(run_dir) / "triage.json", {}) or {}
    primary = tri.get("primary") or {}
    if "slurm" not in tri or not str(primary.get("rule") or "").startswith("slurm:"):
        return verdict
    return {**verdict, "verdict": tri.get("verdict") or state["verdict"], "primary": primary,
            "slurm": tri["slurm"]}
