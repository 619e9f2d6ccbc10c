"""The Slurm launcher against a real single-node Slurm (munge + slurmctld + slurmd on loopback).

Each test submits real commands with sbatch and follows the job to its verdict. The order matters
only for the last test, which kills slurmd (it restarts it afterwards).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from slurm_cluster import SlurmCluster, skip_reason

from console.events import iter_events
from console.rundir.state import initial_state, read_state, update_state, write_json_atomic, write_state
from console.runs.slurm import backend
from console.spec import RunSpec, SlurmOptions

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(120)]
PY = sys.executable
POLL = 0.3


@pytest.fixture(scope="module")
def cluster() -> Iterator[SlurmCluster]:
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    old = os.environ.get("SLURM_CONF")
    with tempfile.TemporaryDirectory(prefix="rlc-slurm-", dir="/tmp") as base:
        os.chmod(base, 0o755)  # munged wants every parent of its socket dir o+x
        c = SlurmCluster(Path(base) / "c")
        try:
            c.start()
            os.environ["SLURM_CONF"] = str(c.conf)
            yield c
        finally:
            c.stop()
            if old is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = old


def make_run(root: Path, steps: list[dict[str, Any]], **slurm: Any) -> tuple[Path, RunSpec, dict[str, Any]]:
    """A run folder as ``start_run`` leaves it before submission (spec.json, plan.json, state.json)."""
    extra = slurm.pop("extra", {"slurm_gpu_sampling": False})
    spec = RunSpec(
        framework="demo", launcher="slurm", runs_dir=str(root), slurm=SlurmOptions(**slurm), extra=extra
    )
    run_dir = root / f"run-{len(list(root.glob('run-*'))) + 1}"
    (run_dir / "logs").mkdir(parents=True)
    plan = {
        "spec": spec.to_dict(),
        "warnings": [],
        "steps": [{"cwd": str(run_dir), "gpus": 0, "env": {}, "on_failure": "stop", **s} for s in steps],
    }
    write_json_atomic(run_dir / "spec.json", spec.to_dict())
    write_json_atomic(run_dir / "plan.json", plan)
    write_state(run_dir, initial_state(run_dir.name, plan["steps"], "slurm"))
    return run_dir, spec, plan


def submit(run_dir: Path, spec: RunSpec, plan: dict[str, Any]) -> str:
    job_id = backend.submit(run_dir, plan, spec)
    update_state(run_dir, lambda s: s.update(slurm_job_id=job_id))
    return job_id


def wait_for(fn, timeout: float = 30.0, what: str = "condition"):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def events_of(run_dir: Path, kind: str) -> list[Any]:
    return [e for e in iter_events(run_dir / "events.jsonl") if e.type == kind]


def test_plan_runs_to_pass_with_logs_exit_files_and_gpu_samples(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    # a stand-in for nvidia-smi (no GPU here), run on the node through srun --overlap --jobid
    fake_smi = tmp_path / "fake_smi.py"
    fake_smi.write_text("print('0, NVIDIA H100 80GB HBM3, GPU-abc, 1234, 81559, 17')\n")
    hostile = "$(touch " + str(tmp_path / "pwned") + "); `id` ' \" ; exit 9"
    run_dir, spec, plan = make_run(
        tmp_path,
        [
            {
                "name": "hello",
                "argv": [PY, "-c", "import sys; print('arg=' + sys.argv[1])", hostile],
                "env": {"RLC_GREETING": "hi there; $HOME"},
            },
            {
                "name": "work",
                "argv": [
                    PY,
                    "-c",
                    "import os,time; print(os.environ['RLC_GREETING']);"
                    "print(open('{run_dir}/spec.json').read()[:1]); time.sleep(2.5)",
                ],
                "env": {"RLC_GREETING": "hi there; $HOME"},
            },
        ],
        extra={
            "slurm_gpu_query": [PY, str(fake_smi)],
            "slurm_gpu_interval_s": 0.5,
            "slurm_ray_metrics_port": 0,
        },
    )
    job_id = submit(run_dir, spec, plan)
    assert job_id.isdigit()
    # the generated script is saved in the run folder, quoted, with generic paths
    script = (run_dir / "slurm" / "job.sbatch").read_text()
    work_line = next(
        line for line in script.splitlines() if "02-work.log" in line and line.startswith(("( ", "{ "))
    )
    assert "export RUN_DIR=" in script and str(run_dir) not in work_line and '"${RUN_DIR}"' in work_line
    assert (run_dir / "slurm" / "submit.sh").read_text().count("sbatch --parsable") == 1

    final = backend.follow(run_dir, poll_s=POLL, max_s=60)
    assert final["status"] == "passed" and final["verdict"] == "Pass"
    assert final["slurm_state"] == "COMPLETED"
    assert [s["status"] for s in final["steps"]] == ["passed", "passed"]
    assert [s["exit_code"] for s in final["steps"]] == [0, 0]
    # local-run layout: logs/NN-<step>.log and .exit
    assert (run_dir / "logs" / "01-hello.log").read_text().strip() == "arg=" + hostile
    assert not (tmp_path / "pwned").exists()
    log2 = (run_dir / "logs" / "02-work.log").read_text()
    assert "hi there; $HOME" in log2 and "{" in log2
    assert (run_dir / "logs" / "02-work.exit").read_text().strip() == "0"
    assert (run_dir / "logs" / f"slurm-{job_id}.out").exists()
    kinds = [e.type for e in iter_events(run_dir / "events.jsonl")]
    assert "run_state" in kinds and "step_state" in kinds
    gpu = events_of(run_dir, "gpu")
    assert gpu, "no GPU sample taken through srun --overlap"
    assert gpu[0].data["node"] == cluster.node
    assert gpu[0].data["devices"][0]["mem_used"] == 1234 * 2**20
    assert gpu[0].data["source"] == "srun"


def test_failed_step_fails_the_run_and_skips_the_rest(cluster: SlurmCluster, tmp_path: Path) -> None:
    run_dir, spec, plan = make_run(
        tmp_path,
        [
            {
                "name": "ray-stop",
                "argv": ["sh", "-c", "echo nothing to stop; exit 1"],
                "on_failure": "continue",
            },
            {"name": "train", "argv": ["sh", "-c", "echo boom >&2; exit 3"]},
            {"name": "metrics", "argv": ["true"]},
        ],
    )
    submit(run_dir, spec, plan)
    final = backend.follow(run_dir, poll_s=POLL, max_s=60)
    assert final["verdict"] == "Fail" and final["status"] == "failed"
    assert final["slurm_state"] == "FAILED" and final["slurm_exit_code"] == 3
    assert [s["status"] for s in final["steps"]] == ["failed", "failed", "skipped"]
    assert final["steps"][1]["exit_code"] == 3
    assert "boom" in (run_dir / "logs" / "02-train.log").read_text()
    assert not (run_dir / "logs" / "03-metrics.log").exists()


def test_cancel_a_running_job(cluster: SlurmCluster, tmp_path: Path) -> None:
    marker = f"rlc-cancel-{os.getpid()}"
    run_dir, spec, plan = make_run(
        tmp_path,
        [
            {
                "name": "long",
                "argv": [PY, "-c", f"import time; print('{marker}', flush=True); time.sleep(120)"],
            },
            {"name": "after", "argv": ["true"]},
        ],
    )
    job_id = submit(run_dir, spec, plan)
    wait_for(lambda: backend.poll(job_id).state == "RUNNING", what="RUNNING")
    wait_for(
        lambda: (
            marker in (run_dir / "logs" / "01-long.log").read_text(errors="replace")
            if (run_dir / "logs" / "01-long.log").exists()
            else False
        ),
        what="step output",
    )
    assert backend.cancel_run(run_dir) == job_id
    final = backend.follow(run_dir, poll_s=POLL, max_s=60)
    assert final["verdict"] == "Cancelled" and final["status"] == "cancelled"
    assert final["slurm_state"] == "CANCELLED"
    assert [s["status"] for s in final["steps"]] == ["cancelled", "cancelled"]

    # the step's process is gone
    def step_gone() -> bool:
        return not any(
            marker in " ".join(p.info["cmdline"] or []) and p.info["status"] != psutil.STATUS_ZOMBIE
            for p in psutil.process_iter(["cmdline", "status"])
        )

    wait_for(step_gone, timeout=15, what="the step's process to end")


def test_start_run_then_reattach_after_the_console_is_killed(cluster: SlurmCluster, tmp_path: Path) -> None:
    """Through the runs engine: start_run submits and starts the detached follower; killing it
    (the console's side of the run) leaves the job running; attach restarts it from state.json."""
    from console.runs.follow import follow_run
    from console.runs.launch import start_run

    spec = RunSpec(
        framework="demo", launcher="slurm", runs_dir=str(tmp_path), extra={"slurm_gpu_sampling": False}
    )
    plan = {
        "steps": [
            {
                "name": "slow",
                "argv": ["sh", "-c", "echo started; sleep 3; echo done"],
                "cwd": str(tmp_path),
                "env": {},
                "gpus": 0,
            }
        ]
    }
    run_dir = start_run(spec, plan=plan)
    state = read_state(run_dir)
    assert state["launcher"] == "slurm" and state["slurm_job_id"]
    pid = state["follower_pid"]
    wait_for(lambda: read_state(run_dir).get("status") == "running", what="running")
    assert backend.start_follower(run_dir) is None  # one follower at a time
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not backend.follower_running(run_dir), what="the follower's lock to drop")
    assert read_state(run_dir)["status"] == "running"
    # a new console reattaches from the job id kept in state.json
    out = io.StringIO()
    assert follow_run(run_dir, out=out, poll_s=0.2) == 0
    final = read_state(run_dir)
    assert final["verdict"] == "Pass" and final["follower_pid"] != pid
    assert "done" in (run_dir / "logs" / "01-slow.log").read_text()


def _log_says(log: Path, text: str) -> bool:
    return log.exists() and text in log.read_text(errors="replace")


def test_cancel_run_of_the_runs_engine_scancels(cluster: SlurmCluster, tmp_path: Path) -> None:
    from console.runs.cancel import cancel_run
    from console.runs.launch import start_run

    spec = RunSpec(
        framework="demo", launcher="slurm", runs_dir=str(tmp_path), extra={"slurm_gpu_sampling": False}
    )
    plan = {
        "steps": [
            {
                "name": "long",
                "argv": ["sh", "-c", "echo started; sleep 120"],
                "cwd": str(tmp_path),
                "env": {},
                "gpus": 0,
            }
        ]
    }
    run_dir = start_run(spec, plan=plan)
    job_id = read_state(run_dir)["slurm_job_id"]
    wait_for(lambda: _log_says(run_dir / "logs" / "01-long.log", "started"), what="the step to start")
    assert cancel_run(run_dir, grace=2) is True
    final = read_state(run_dir)
    assert final["verdict"] == "Cancelled" and final["steps"][0]["status"] == "cancelled"
    assert backend.poll(job_id).state == "CANCELLED"


def test_job_that_can_never_start_is_blocked(cluster: SlurmCluster, tmp_path: Path) -> None:
    run_dir, spec, plan = make_run(
        tmp_path, [{"name": "never", "argv": ["true"]}], partition="tiny", time="10:00"
    )
    job_id = submit(run_dir, spec, plan)
    final = backend.follow(run_dir, poll_s=POLL, max_s=60)
    assert final["verdict"] == "Blocked" and final["status"] == "blocked"
    assert "PartitionTimeLimit" in final["slurm_reason"]
    assert final["steps"][0]["status"] == "skipped"
    wait_for(lambda: backend.poll(job_id).state in ("CANCELLED", "UNKNOWN"), what="the job cancelled")


def test_node_failure_mid_job_is_blocked(cluster: SlurmCluster, tmp_path: Path) -> None:
    run_dir, spec, plan = make_run(
        tmp_path,
        [
            {"name": "train", "argv": ["sh", "-c", "echo training; sleep 600"]},
        ],
    )
    job_id = submit(run_dir, spec, plan)
    # the log file exists as soon as the batch script redirects into it, before srun launched
    # the task: wait for the task's own output, or the kill races the launch (srun then fails)
    wait_for(lambda: _log_says(run_dir / "logs" / "01-train.log", "training"), what="the step to start")
    try:
        cluster.kill_slurmd()
        final = backend.follow(run_dir, poll_s=POLL, max_s=150)
        assert final["verdict"] == "Blocked" and final["status"] == "blocked", json.dumps(final)
        assert final["slurm_state"] == "NODE_FAIL"
        assert "not evidence against the change" in final["slurm_reason"]
        assert final["steps"][0]["status"] == "cancelled"
        run_states = events_of(run_dir, "run_state")
        assert run_states[-1].data["verdict"] == "Blocked"
        tri = json.loads((run_dir / "triage.json").read_text())
        assert tri["primary"]["class"] == "node_failure" and tri["slurm"]["state"] == "NODE_FAIL"
        from console.report import render_json

        assert render_json(run_dir)["result"] == "Blocked"
        assert job_id == final["slurm_job_id"]
    finally:
        cluster.stop_job_leftovers()
        cluster.start_slurmd()


def test_submission_line_masks_secrets_and_script_holds_none(tmp_path: Path) -> None:
    """No cluster needed: what is written and shown before submission."""
    from console.runs.slurm.script import render

    run_dir, spec, plan = make_run(
        tmp_path,
        [
            {
                "name": "s",
                "argv": ["echo", "x"],
                "env": {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz", "A": "1"},
            },
        ],
        container="nvcr.io/x:1",
        mounts=["/data:/data"],
    )
    sub = render(run_dir, plan, spec)
    assert "hf_abcdef" not in sub.preview() and "hf_abcdef" not in sub.script_text
    assert sub.secret_env == {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz"}
    assert "--container-image=nvcr.io/x:1" in sub.script_text
    assert '--container-mounts=/data:/data,"${RUN_DIR}":"${RUN_DIR}"' in sub.script_text
    assert '--container-workdir="${RUN_DIR}"' in sub.script_text
    assert subprocess.run(["bash", "-n"], input=sub.script_text, text=True).returncode == 0
    json.dumps(sub.sbatch_args)
