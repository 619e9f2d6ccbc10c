"""Secrets a Slurm step prints never reach the run folder: the batch script pipes each step's output
through a redacting filter on the batch host, which learns the secret values from the job's own
environment (``HF_TOKEN`` from the submitting shell, ``RL_CONSOLE_SECRET_ARG_N`` for argv secrets).
Real local Slurm (``tests/slurm_cluster.py``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from runs_support import wait_finished
from slurm_cluster import SlurmCluster, cluster_for_tests

from console.report import write_report
from console.runs.launch import start_run
from console.runs.slurm import script
from console.spec import RunSpec

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(180)]
ENV_SECRET = "planted-env-secret-5a7c1e93"  # not token-shaped: only the literal value can mask it
ARGV_SECRET = "planted-argv-secret-9d2b4f61"
PRINT = ("import os, sys\n"
         "print('env token is', os.environ['HF_TOKEN'], flush=True)\n"
         "print('argv token is', sys.argv[2], file=sys.stderr, flush=True)\n"
         "print('partial ' + os.environ['HF_TOKEN'], end='', flush=True)\n"
         "sys.exit(3)\n")


@pytest.fixture(scope="module")
def cluster() -> Iterator[SlurmCluster]:
    with cluster_for_tests() as c:
        yield c


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_TOKEN", ENV_SECRET)  # the submitting shell's; sbatch passes it to the job
    spec = RunSpec(framework="nemo-rl", runs_dir=str(tmp_path), launcher="slurm",
                   extra={"slurm_gpu_sampling": False})
    step = {"name": "leak", "argv": [sys.executable, "-u", "-c", PRINT, "--hf-token", ARGV_SECRET],
            "env": {}, "cwd": str(tmp_path), "kind": "train"}
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


def test_step_output_is_redacted_on_its_way_to_the_log(cluster: SlurmCluster, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = _run(tmp_path, monkeypatch)
    assert _no_secret_anywhere(run_dir) == ["env token is ***", "argv token is ***", "partial ***"]
    srun_log = (run_dir / "logs" / "01-leak.srun.log").read_text()
    assert "warning" not in srun_log.lower() and "exit code 3" in srun_log, srun_log


def test_fallback_filter_when_the_console_interpreter_is_not_on_the_node(
        cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(script, "FILTER_PYTHON", "/nonexistent/rl-console/python")
    run_dir = _run(tmp_path, monkeypatch)
    assert _no_secret_anywhere(run_dir) == ["env token is ***", "argv token is ***", "partial ***"]
    srun_log = (run_dir / "logs" / "01-leak.srun.log").read_text()
    assert "python3 fallback" in srun_log, srun_log
    sub = json.loads((run_dir / "slurm" / "submission.json").read_text())
    assert sub["mode"] == "srun"
