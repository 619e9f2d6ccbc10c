"""Run folders written exactly as console/CONTRACTS.md describes, for the console's tests.

They are fixtures (a finished or running run as the supervisor leaves it on disk), not stand-ins
for a back-end: the console only ever reads these files.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psutil

FIXED_T = 1_795_000_000.0  # fixed timestamps keep snapshots stable
_STAND_INS: list[subprocess.Popen] = []


def _stop_stand_ins() -> None:
    for proc in _STAND_INS:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


atexit.register(_stop_stand_ins)


def supervisor_stand_in(run: Path) -> tuple[int, float]:
    """A live process that is this run's supervisor as far as identity goes (its command line names
    ``console.runs.supervisor`` and the run folder): a running run without one is settled as
    "supervisor lost" by every reader. Killed when the test session ends."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", "console.runs.supervisor", str(run.resolve())],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
    )
    _STAND_INS.append(proc)
    return proc.pid, psutil.Process(proc.pid).create_time()


def write_run(
    runs_dir: Path,
    run_id: str = "20261121-223600-demo-l0",
    *,
    status: str = "passed",
    verdict: str | None = "Pass",
    log_lines: int = 40,
    created: float = FIXED_T,
    failing: bool = False,
) -> Path:
    run = runs_dir / run_id
    (run / "logs").mkdir(parents=True, exist_ok=True)
    steps = [
        {
            "name": "demo-grpo",
            "title": "Level 0: demo GRPO",
            "argv": ["python", "-m", "console.demo.grpo"],
            "env": {},
            "unset": [],
            "cwd": str(run),
            "gpus": 0,
            "proves": "the loop trains",
            "criteria": ["loss decreases"],
            "level": 0,
            "variant": None,
            "deliverable": "framework_run",
            "kind": "train",
            "log_files": [],
            "tb_dir": None,
            "metrics_json": None,
            "checks": [],
            "total_steps": 20,
            "on_failure": "stop",
        }
    ]
    (run / "plan.json").write_text(
        json.dumps({"spec": {"framework": "demo"}, "warnings": [], "steps": steps})
    )
    (run / "spec.json").write_text(json.dumps({"framework": "demo", "levels": [0], "variants": []}))
    log = "logs/01-demo-grpo.log"
    lines = []
    for i in range(1, log_lines + 1):
        lines.append(f"step {i}/20 loss={1.0 / i:.4f} reward={i / 20:.3f}")
    if failing:
        lines.append("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    (run / log).write_text("\n".join(lines) + "\n")
    events = []
    for i in range(1, 21):
        events.append(
            json.dumps({"t": created + i, "type": "progress", "step": i, "total": 20, "eta_s": 20 - i})
        )
        events.append(
            json.dumps(
                {
                    "t": created + i,
                    "type": "metrics",
                    "step": i,
                    "values": {"loss": 1.0 / i, "reward": i / 20},
                }
            )
        )
    if failing:
        events.append(
            json.dumps(
                {
                    "t": created + 30,
                    "type": "finding",
                    "step": "demo-grpo",
                    "class": "cuda_oom",
                    "verdict": "Fail",
                    "line": log_lines + 1,
                    "evidence": "torch.OutOfMemoryError: CUDA out of memory",
                }
            )
        )
        (run / "triage.json").write_text(
            json.dumps(
                {
                    "verdict": "Fail",
                    "framework": "demo",
                    "primary": {
                        "class": "cuda_oom",
                        "verdict": "Fail",
                        "line": log_lines + 1,
                        "evidence": "torch.OutOfMemoryError: CUDA out of memory",
                        "advice": "Lower the micro batch size.",
                        "remedy": {"env": {}, "overrides": ["policy.train_micro_batch_size=1"], "unset": []},
                    },
                    "findings": [
                        {
                            "class": "cuda_oom",
                            "verdict": "Fail",
                            "line": log_lines + 1,
                            "count": 1,
                            "evidence": "torch.OutOfMemoryError: CUDA out of memory",
                        }
                    ],
                    "progress": {"step": 20, "total": 20},
                }
            )
        )
    (run / "events.jsonl").write_text("\n".join(events) + "\n")
    state = {
        "id": run_id,
        "status": status,
        "verdict": verdict,
        "launcher": "local",
        "supervisor_pid": None,
        "slurm_job_id": None,
        "created": created,
        "started": created,
        "ended": None if status == "running" else created + 60,
        "current_step": 0,
        "cancel_requested": False,
        "linked_from": None,
        "steps": [
            {
                "name": "demo-grpo",
                "status": status if status != "blocked" else "failed",
                "pid": None,
                "pgid": None,
                "exit_code": None if status == "running" else (1 if failing else 0),
                "started": created,
                "ended": None,
                "log": log,
                "reason": None,
            }
        ],
    }
    if status == "running":
        state["supervisor_pid"], state["supervisor_create_time"] = supervisor_stand_in(run)
    (run / "state.json").write_text(json.dumps(state))
    return run


# -- driving the app (Textual's pilot) --------------------------------------------------------------
def drive(app: Any, body: Callable[[Any], Awaitable[None]], size: tuple[int, int] = (80, 24)) -> None:
    """Run ``app`` headless at ``size`` and ``body(pilot)`` in it."""

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await body(pilot)

    asyncio.run(main())


async def workers_done(pilot: Any, *groups: str) -> None:
    """Wait for the app's workers of ``groups`` (one-shot work: plan, preflight, report, triage...) to
    end, then for the screen to handle what they posted."""
    await pilot.pause()  # the key or message that starts the work is handled
    workers = [w for w in pilot.app.workers if w.group in groups]
    if workers:  # none: done already (an empty list would wait for every worker, the endless ones too)
        await pilot.app.workers.wait_for_complete(workers)
    await pilot.pause()


async def wait_for(pilot: Any, cond: Callable[[], bool], timeout: float = 10.0) -> None:
    """For what no worker's end marks: a message of a worker that polls on (the monitor's snapshots
    and log lines, the Home's rescans), a screen pushed after a key."""
    for _ in range(int(timeout / 0.05)):
        if cond():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not met in time")


def screen_name(app: Any) -> str:
    return type(app.screen).__name__


def notes(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]


def text_of(widget: Any) -> str:
    return str(widget.render())
