"""Secrets a Slurm step prints never reach the run folder: the batch script pipes each step's output
through a redacting filter on the batch host, which learns the secret values from the job's own
environment (``HF_TOKEN`` from the submitting shell, ``RL_CONSOLE_SECRET_ARG_N`` for argv secrets).
Real local Slurm (``tests/slurm_cluster.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from runs_support import wait_finished
from slurm_cluster import SlurmCluster, cluster_for_tests

from console.report import write_report
from console.runs.launch import start_run
from console.runs.slurm import script
from console.spec import RunSpec, SlurmOptions

ENV_SECRET = "planted-env-secret-5a7c1e93"  # not token-shaped: only the literal value can mask it
ARGV_SECRET = "planted-argv-secret-9d2b4f61"
PRINT = (
    "import os, sys\n"
    "print('env token is', os.environ['HF_TOKEN'], flush=True)\n"
    "print('argv token is', sys.argv[2], file=sys.stderr, flush=True)\n"
    "print('partial ' + os.environ['HF_TOKEN'], end='', flush=True)\n"
    "sys.exit(3)\n"
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[SlurmCluster]:
    with cluster_for_tests() as c:
        yield c


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_TOKEN", ENV_SECRET)  # the submitting shell's; sbatch passes it to the job
    spec = RunSpec(
        framework="nemo-rl", runs_dir=str(tmp_path), launcher="slurm", extra={"slurm_gpu_sampling": False}
    )
    step = {
        "name": "leak",
        "argv": [sys.executable, "-u", "-c", PRINT, "--hf-token", ARGV_SECRET],
        "env": {},
        "cwd": str(tmp_path),
        "kind": "train",
    }
    run_dir = start_run(spec, plan={"steps": [step]})
    final = wait_finished(run_dir, timeout=120)
    write_report(run_dir)
    assert final["steps"][0]["exit_code"] == 3, final  # the step's own exit code, through the pipe
    return run_dir


def _no_secret_anywhere(run_dir: Path) -> list[str]:
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert {"events.jsonl", "triage.json", "report.md", "report.json"} <= {p.name for p in files}
    assert any(p.name.endswith(".srun.log") for p in files) and (run_dir / "slurm" / "job.sbatch").is_file()
    for p in files:
        data = p.read_bytes()
        assert ENV_SECRET.encode() not in data and ARGV_SECRET.encode() not in data, p
    return (run_dir / "logs" / "01-leak.log").read_text().splitlines()


@pytest.mark.slurm
@pytest.mark.timeout(180)
def test_step_output_is_redacted_on_its_way_to_the_log(
    cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = _run(tmp_path, monkeypatch)
    assert _no_secret_anywhere(run_dir) == ["env token is ***", "argv token is ***", "partial ***"]
    srun_log = (run_dir / "logs" / "01-leak.srun.log").read_text()
    assert "warning" not in srun_log.lower() and "exit code 3" in srun_log, srun_log


@pytest.mark.slurm
@pytest.mark.timeout(180)
def test_fallback_filter_when_the_console_interpreter_is_not_on_the_node(
    cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(script, "FILTER_PYTHON", "/nonexistent/rl-console/python")
    run_dir = _run(tmp_path, monkeypatch)
    assert _no_secret_anywhere(run_dir) == ["env token is ***", "argv token is ***", "partial ***"]
    srun_log = (run_dir / "logs" / "01-leak.srun.log").read_text()
    assert "python3 fallback" in srun_log, srun_log
    sub = json.loads((run_dir / "slurm" / "submission.json").read_text())
    assert sub["mode"] == "srun"


@pytest.mark.parametrize("python", [None, "/nonexistent/rl-console/python"], ids=["console", "python3"])
def test_ray_sub_driver_steps_are_redacted_too(
    tmp_path: Path, python: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ray.sub mode runs steps without srun (inside the head container): the same filter, run here
    with bash as ray.sub's COMMAND would. No Slurm needed."""
    monkeypatch.setattr(script, "FILTER_PYTHON", python)
    repo = tmp_path / "nemo-rl"
    repo.mkdir()
    (repo / "ray.sub").write_text("#!/bin/bash\n")
    spec = RunSpec(
        framework="nemo-rl",
        repo=str(repo),
        launcher="slurm",
        env={"HF_TOKEN": ENV_SECRET},
        slurm=SlurmOptions(nodes=2, container="img"),
    )
    run_dir = tmp_path / "run"
    plan = {
        "steps": [
            {
                "name": "leak",
                "argv": [sys.executable, "-u", "-c", PRINT, "--hf-token", ARGV_SECRET],
                "env": {},
                "cwd": str(tmp_path),
            },
            {"name": "never", "argv": ["true"], "env": {}},
        ]
    }
    sub = script.render(run_dir, plan, spec)
    assert sub.mode == "ray.sub" and ENV_SECRET not in sub.script_text and ARGV_SECRET not in sub.script_text
    (run_dir / "slurm").mkdir(parents=True)
    driver = run_dir / "slurm" / "driver.sh"
    driver.write_text(sub.script_text)
    env = {k: v for k, v in os.environ.items() if k != "HF_TOKEN"} | sub.secret_env
    proc = subprocess.run(["bash", str(driver)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr  # the first step's own code, and the run stops there
    log = (run_dir / "logs" / "01-leak.log").read_text().splitlines()
    assert log == ["env token is ***", "argv token is ***", "partial ***"]
    assert (run_dir / "logs" / "01-leak.exit").read_text().strip() == "3"
    assert not (run_dir / "logs" / "02-never.exit").exists()
    assert ENV_SECRET not in proc.stdout + proc.stderr and ARGV_SECRET not in proc.stdout
    assert ("python3 fallback" in proc.stdout) == (python is not None)
