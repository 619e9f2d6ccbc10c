"""Cancel of a run that started a real local Ray cluster: `ray stop --force`, nothing left behind."""

from __future__ import annotations

import socket
from pathlib import Path

import psutil
import pytest
from runs_support import reap_runs, step, wait_for

from console.monitor.procs import RAY_PROCESS_NAMES, run_marker, run_processes
from console.rundir.state import read_state
from console.runs.cancel import cancel_run, ray_command
from console.runs.launch import start_run
from console.spec import RunSpec

pytestmark = [pytest.mark.ray, pytest.mark.timeout(180)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_procs() -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["name", "cmdline"]):
        name = p.info["name"] or ""
        if any(name.startswith(r) for r in ("raylet", "gcs_server")):
            out.append(p)
    return out


def test_cancel_stops_the_ray_cluster_the_run_started(tmp_path: Path) -> None:
    ray = ray_command()
    if ray is None:
        pytest.skip("ray is not installed")
    if _ray_procs():
        pytest.skip("a Ray cluster is already running on this machine; ray stop --force would end it")
    code = (
        "import os, subprocess, time\n"
        f"subprocess.run([{ray!r}, 'start', '--head', '--num-cpus=1', '--include-dashboard=false',"
        f" '--port={_free_port()}', '--disable-usage-stats'], check=True,"
        " env=dict(os.environ, RAY_AUTH_MODE='disabled'))\n"
        "print('ray up', flush=True)\n"
        "time.sleep(300)\n"
    )
    runs = tmp_path / "runs"
    run_dir = start_run(RunSpec(runs_dir=str(runs)), plan={"steps": [step("train", code)]})
    log = run_dir / "logs" / "01-train.log"
    try:
        wait_for(lambda: log.exists() and "ray up" in log.read_text(), 120, "ray start --head")
        ours = run_processes(run_marker(run_dir))
        assert any(any(n in (p.name() or "") for n in RAY_PROCESS_NAMES) for p in ours), (
            "the cluster's daemons carry the run's marker"
        )
    finally:
        assert cancel_run(run_dir, grace=2.0) is True
    assert read_state(run_dir)["verdict"] == "Cancelled"
    assert run_processes(run_marker(run_dir)) == []
    wait_for(lambda: not _ray_procs(), 30, "raylet and gcs_server to exit")
    assert reap_runs(runs) == []
