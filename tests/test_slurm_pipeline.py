"""Slurm runs go through the same pipeline as local runs, on a real local Slurm (munge + slurmctld +
slurmd on loopback): same verdict, primary class, progress and findings; live progress while the
job runs; a hang found by the follower.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runs_support import ROOT, cli, step, wait_finished, wait_for
from slurm_cluster import SlurmCluster, cluster_for_tests

from console.events import iter_events
from console.rundir.state import read_state
from console.runs.cancel import cancel_run
from console.runs.launch import start_run
from console.runs.replay import replay_plan
from console.spec import RunSpec

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(240)]
FIXTURES = ROOT / "tests" / "fixtures" / "triage"


@pytest.fixture(scope="module")
def cluster() -> Iterator[SlurmCluster]:
    with cluster_for_tests() as c:
        yield c


def _triage(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "triage.json").read_text(encoding="utf-8"))


def _events(run_dir: Path, kind: str) -> list[Any]:
    return [e for e in iter_events(run_dir / "events.jsonl") if e.type == kind]


def picture(run_dir: Path) -> dict[str, Any]:
    """What must not depend on the launcher: verdicts, primary, progress, findings, step outcomes."""
    state = read_state(run_dir)
    tri = _triage(run_dir)
    primary = tri.get("primary") or {}
    progress_events = [
        (e.step, e.data.get("step"), e.data.get("total")) for e in _events(run_dir, "progress")
    ]
    return {
        "verdict": state["verdict"],
        "triage_verdict": tri["verdict"],
        "primary": (primary.get("class"), primary.get("verdict"), primary.get("step"), primary.get("line")),
        "progress": tri.get("progress"),
        "findings": sorted(
            (f.get("class"), f.get("verdict"), f.get("line"), f.get("file"))
            for f in tri.get("findings") or []
        ),
        "finding_events": sorted(
            (e.step, e.data.get("class"), e.data.get("line")) for e in _events(run_dir, "finding")
        ),
        "progress_events": sorted(set(progress_events), key=str),
        "metric_events": sorted(
            (e.step, e.data.get("step"), tuple(sorted(e.data.get("values") or {})))
            for e in _events(run_dir, "metrics")
        ),
        "deliverables": [(d["name"], d["status"]) for d in tri.get("deliverables") or []],
        "steps": [(s["name"], s["status"], s["exit_code"]) for s in state["steps"]],
    }


def _run_cli(runs: Path, launcher: str, *variant: str) -> tuple[Path, int, str]:
    proc = cli(
        "run",
        "--framework",
        "demo",
        *variant,
        "--launcher",
        launcher,
        "--headless",
        "--no-doctor",
        "--runs-dir",
        str(runs),
        timeout=200,
    )
    run_dirs = sorted(p for p in runs.iterdir() if (p / "state.json").exists())
    assert len(run_dirs) == 1, proc.stderr
    return run_dirs[0], proc.returncode, proc.stdout


@pytest.mark.parametrize("variant", [[], ["--variant", "nan"]], ids=["demo", "nan"])
def test_demo_gives_the_same_picture_through_slurm_and_locally(
    cluster: SlurmCluster, tmp_path: Path, variant: list[str]
) -> None:
    local_dir, local_rc, local_out = _run_cli(tmp_path / "local", "local", *variant)
    slurm_dir, slurm_rc, slurm_out = _run_cli(tmp_path / "slurm", "slurm", *variant)
    state = read_state(slurm_dir)
    assert state["launcher"] == "slurm" and state["slurm_job_id"]
    assert state["slurm_state"] == ("FAILED" if variant else "COMPLETED")  # a failed step fails the job
    local, slurm = picture(local_dir), picture(slurm_dir)
    assert slurm == local
    assert slurm_rc == local_rc
    assert local_out.splitlines()[-1] == slurm_out.splitlines()[-1]  # "Verdict: ..."
    if variant:
        assert local["verdict"] == "Fail" and local["primary"][0] == "metric_failure"
        assert any(f[0] == "metric_failure" for f in local["findings"])
    else:
        assert local["verdict"] == "Pass" and local["primary"][0] is None
        assert local["progress"] == {"step": 30, "total": 30}
    assert len(local["progress_events"]) >= 30


@pytest.mark.parametrize("log", ["nemo_pass.log", "nan_loss.log", "incomplete.log"])
def test_replayed_nemo_rl_log_gives_the_same_picture(cluster: SlurmCluster, tmp_path: Path, log: str) -> None:
    """A recorded NeMo-RL log replayed as a live run (the emitter exits 0 however the log ends)."""
    pictures = []
    for launcher in ("local", "slurm"):
        spec = RunSpec(
            framework="nemo-rl",
            levels=[0],
            variants=["replay"],
            runs_dir=str(tmp_path / launcher),
            launcher=launcher,
            extra={"slurm_gpu_sampling": False},
        )
        run_dir = start_run(spec, plan=replay_plan(FIXTURES / log, 20.0, "nemo-rl"))
        wait_finished(run_dir, timeout=120)
        pictures.append(picture(run_dir))
    local, slurm = pictures
    assert slurm == local
    if log == "nan_loss.log":
        assert local["verdict"] == "Fail" and local["primary"][0] == "metric_failure"
    elif log == "nemo_pass.log":  # the run passes; the replay writes no metrics.json (capture: Fail)
        assert (
            local["primary"][0] is None and ("NeMo-RL Megatron policy run", "Pass") in local["deliverables"]
        )
    else:  # exit 0 before the last step: not a Pass on either launcher (was Pass through Slurm before)
        assert local["verdict"] != "Pass"


def test_progress_events_flow_while_the_job_runs(cluster: SlurmCluster, tmp_path: Path) -> None:
    """events.jsonl grows with progress while the job is RUNNING, long before it ends."""
    train = (
        "import time\n"
        "for i in range(1, 9):\n"
        "    print('=' * 20, f'Step {i}/8', '=' * 20, flush=True)\n"
        "    time.sleep(1.0)\n"
    )
    spec = RunSpec(
        framework="nemo-rl", runs_dir=str(tmp_path), launcher="slurm", extra={"slurm_gpu_sampling": False}
    )
    t0 = time.time()
    run_dir = start_run(spec, plan={"steps": [step("train", train, kind="train", cwd=str(tmp_path))]})
    job_id = read_state(run_dir)["slurm_job_id"]
    seen: list[tuple[float, int, str | None]] = []

    def three_progress_while_running() -> bool:
        progress = _events(run_dir, "progress")
        state = read_state(run_dir)
        if progress:
            seen.append((time.time(), len(progress), state.get("slurm_state")))
        return len(progress) >= 3 and state.get("slurm_state") == "RUNNING" and not state.get("verdict")

    wait_for(three_progress_while_running, timeout=60, what="3 progress events while the job runs")
    final = wait_finished(run_dir, timeout=60)
    assert final["verdict"] == "Pass"
    progress = _events(run_dir, "progress")
    assert [e.data["step"] for e in progress] == list(range(1, 9))
    assert all(e.data["total"] == 8 and e.step == "train" for e in progress)
    # the progress events were written over the job's life, not in one burst at its end
    assert progress[-1].t - progress[0].t >= 5.0
    submitted = json.loads((run_dir / "slurm" / "submission.json").read_text())["submitted"]
    latency = progress[0].t - submitted
    print(
        f"\nslurm job {job_id}: sbatch -> first progress event {latency:.2f}s; "
        f"start_run -> first progress {progress[0].t - t0:.2f}s; "
        f"progress events seen growing while RUNNING: {sorted({n for _, n, _ in seen})}"
    )


def test_the_follower_finds_a_hang(cluster: SlurmCluster, tmp_path: Path) -> None:
    stuck = (
        "import time; print('=' * 25, 'Step 1/5', '=' * 25, flush=True); "
        "print('▶ Generating responses for batch of size 8...', flush=True); time.sleep(300)"
    )
    spec = RunSpec(
        framework="nemo-rl",
        runs_dir=str(tmp_path),
        launcher="slurm",
        extra={"slurm_gpu_sampling": False, "hang_timeout_s": 3.0},
    )
    run_dir = start_run(spec, plan={"steps": [step("train", stuck, kind="train", cwd=str(tmp_path))]})
    try:
        wait_for(lambda: bool(_events(run_dir, "hang")), timeout=60, what="a hang event from the follower")
        hang = _events(run_dir, "hang")[0]
        assert hang.step == "train" and hang.data["idle_s"] >= 3.0
        assert read_state(run_dir)["slurm_state"] == "RUNNING"
        findings = [e for e in _events(run_dir, "finding") if e.data.get("class") == "hang"]
        assert findings and findings[0].step == "train"
    finally:
        assert cancel_run(run_dir, grace=2) is True
    final = read_state(run_dir)
    assert final["verdict"] == "Cancelled"


def test_the_hang_is_the_primary_when_the_job_times_out(cluster: SlurmCluster, tmp_path: Path) -> None:
    """TIMEOUT is the job state's news; the hang found in the log is the cause triage names."""
    stuck = "import time; print('=' * 25, 'Step 1/5', '=' * 25, flush=True); time.sleep(300)"
    spec = RunSpec(
        framework="nemo-rl",
        runs_dir=str(tmp_path),
        launcher="slurm",
        extra={"slurm_gpu_sampling": False, "hang_timeout_s": 2.0},
    )
    spec.slurm.time = "1"  # one minute: the shortest limit Slurm takes
    run_dir = start_run(spec, plan={"steps": [step("train", stuck, kind="train", cwd=str(tmp_path))]})
    final = wait_finished(run_dir, timeout=200)
    assert final["slurm_state"] == "TIMEOUT" and final["verdict"] == "Fail"
    tri = _triage(run_dir)
    assert tri["primary"]["class"] == "hang" and tri["verdict"] == "Fail"
    assert tri["slurm"]["state"] == "TIMEOUT"


def test_a_restarted_follower_does_not_repeat_events(cluster: SlurmCluster, tmp_path: Path) -> None:
    """Kill the follower mid-run; the next one goes on from the saved cursor (no duplicate progress)."""
    import signal

    from console.runs.slurm import backend

    train = (
        "import time\n"
        "for i in range(1, 7):\n"
        "    print('=' * 20, f'Step {i}/6', '=' * 20, flush=True)\n"
        "    time.sleep(1.0)\n"
    )
    spec = RunSpec(
        framework="nemo-rl", runs_dir=str(tmp_path), launcher="slurm", extra={"slurm_gpu_sampling": False}
    )
    run_dir = start_run(spec, plan={"steps": [step("train", train, kind="train", cwd=str(tmp_path))]})
    wait_for(lambda: len(_events(run_dir, "progress")) >= 2, timeout=60, what="two progress events")
    # not in the instant between publishing a batch of events and saving the cursor (a kill there
    # repeats that one batch): the follower saves it right after each batch
    time.sleep(0.3)
    os.kill(read_state(run_dir)["follower_pid"], signal.SIGKILL)
    wait_for(lambda: not backend.follower_running(run_dir), what="the follower's lock to drop")
    assert backend.start_follower(run_dir) is not None
    final = wait_finished(run_dir, timeout=60)
    assert final["verdict"] == "Pass"
    steps = [e.data["step"] for e in _events(run_dir, "progress")]
    assert steps == list(range(1, 7)), steps
