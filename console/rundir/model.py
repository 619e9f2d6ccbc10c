"""The shape of ``state.json`` (console/CONTRACTS.md), as TypedDicts a type checker holds every
reader and writer to. The file stays plain JSON: these types describe it, they do not convert it.

``initial_state`` writes every key of ``State`` and ``StepState`` that is not marked
``NotRequired``; the others are added as the run goes (by the supervisor, the Slurm backend,
cancel, recover and compare).
"""

from typing import Any, NotRequired, TypedDict


class StepState(TypedDict):
    name: str
    status: str  # pending | running | passed | failed | skipped | cancelled
    pid: int | None
    pgid: int | None
    exit_code: int | None
    started: float | None
    ended: float | None
    log: str  # relative to the run folder: logs/NN-<step>.log
    reason: str | None
    create_time: NotRequired[float | None]  # psutil create time of pid (survives PID reuse)
    evidence_before: NotRequired[Any]  # the evidence snapshot taken before the step started
    srun: NotRequired[dict[str, Any]]  # Slurm: the step's srun record
    evidence: NotRequired[Any]  # what the step left behind (console/runs/supervisor.py)


class State(TypedDict):
    id: str
    status: str  # pending | running | passed | failed | blocked | cancelled
    verdict: str | None  # Pass | Fail | Blocked | Cancelled | Incomplete
    launcher: str  # local | slurm
    supervisor_pid: int | None
    slurm_job_id: str | None
    created: float
    started: float | None
    ended: float | None
    current_step: int
    cancel_requested: bool
    linked_from: str | None
    steps: list[StepState]
    supervisor_create_time: NotRequired[float | None]
    cancel_grace: NotRequired[float]
    error: NotRequired[str]
    slurm_state: NotRequired[str]  # Slurm's base state of the job (PENDING, RUNNING, ...)
    slurm_reason: NotRequired[str | None]  # Slurm's reason (or why sbatch refused the job)
    slurm_nodes: NotRequired[list[str]]
    slurm_logs: NotRequired[list[str]]  # the job's own logs, relative to the run folder
    slurm_exit_code: NotRequired[int | None]
    follower_pid: NotRequired[int]
    baseline_of_ref: NotRequired[str]
    baseline_run: NotRequired[str]
    candidate_run: NotRequired[str]
