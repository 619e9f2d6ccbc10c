"""Cancel of a real three-level process tree whose grandchild started its own session."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil
import pytest
from runs_support import PY, cli, reap_runs, step, wait_finished, wait_for

from console.monitor.procs import run_processes
from console.rundir.state import read_state
from console.runs.launch import start_run
from console.spec import RunSpec

pytestmark = pytest.mark.timeout(120)

# step -> child -> grandchild (setsid, ignores SIGINT and SIGTERM: only SIGKILL ends it)
TREE = r"""
import os, signal, subprocess, sys, time
level = int(sys.argv[1]) if len(sys.argv) > 1 else 0
if level == 2:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    open(os.environ["MARK_DIR"] + "/grandchild", "w").write(str(os.getpid()))
else:
    subprocess.Popen([sys.executable, __file__, str(level + 1)], start_new_session=(level == 1))
print("level", level, "pid", os.getpid(), flush=True)
while True:
    time.sleep(0.2)
"""


def tree_step(mark_dir: Path) -> dict:
    script = mark_dir / "tree.py"
    script.write_text(TREE)
    return {"name": "tree", "argv": [PY, str(script), "0"], "env": {"MARK_DIR": str(mark_dir)}, "cwd": None}


@pytest.fixture
def runs_dir(tmp_path: Path):
    d = tmp_path / "runs"
    yield d
    assert reap_runs(d) == [], "processes survived"


def test_cancel_kills_every_process_of_the_run(runs_dir: Path, tmp_path: Path) -> None:
    plan = {"steps": [tree_step(tmp_path), step("after", "print('never')")]}
    run_dir = start_run(RunSpec(runs_dir=str(runs_dir)), plan=plan)
    wait_for(lambda: (tmp_path / "grandchild").exists(), 30, "the grandchild")
    grandchild = psutil.Process(int((tmp_path / "grandchild").read_text()))
    state = read_state(run_dir)
    step_pgid = state["steps"][0]["pgid"]
    assert grandchild.pid != step_pgid and grandchild.status() != psutil.STATUS_ZOMBIE
    assert grandchild.pid == os.getsid(grandchild.pid), "grandchild has its own session"
    tree = run_processes(run_dir.name, roots=[step_pgid])
    assert len(tree) >= 4  # wrapper, step, child, grandchild
    pids = [p.pid for p in tree]
    t0 = time.monotonic()
    result = cli("cancel", run_dir.name, "--runs-dir", str(runs_dir), "--grace", "1")
    elapsed = time.monotonic() - t0
    assert result.returncode == 0, result.stderr
    assert "cancelled" in result.stdout
    survivors = [
        pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    ]
    assert survivors == []
    assert run_processes(run_dir.name) == []
    state = wait_finished(run_dir, 10)
    assert state["status"] == "cancelled" and state["verdict"] == "Cancelled"
    assert state["steps"][0]["status"] == "cancelled"
    assert state["steps"][1]["status"] == "skipped"
    assert elapsed < 30
    # cancelling again: already ended, still exit 0; attach of a cancelled run exits 130
    again = cli("cancel", run_dir.name, "--runs-dir", str(runs_dir), "--grace", "1")
    assert again.returncode == 0 and "already ended" in again.stdout
    attach = cli("attach", run_dir.name, "--runs-dir", str(runs_dir), "--headless")
    assert attach.returncode == 130 and "Verdict: Cancelled" in attach.stdout


def test_cancel_without_supervisor(runs_dir: Path, tmp_path: Path) -> None:
    """The supervisor was SIGKILLed: cancel still finds the tree (environment marker) and kills it."""
    run_dir = start_run(RunSpec(runs_dir=str(runs_dir)), plan={"steps": [tree_step(tmp_path)]})
    wait_for(lambda: (tmp_path / "grandchild").exists(), 30, "the grandchild")
    psutil.Process(read_state(run_dir)["supervisor_pid"]).kill()
    from console.runs.cancel import cancel_run

    assert cancel_run(run_dir, grace=0.5)
    assert run_processes(run_dir.name) == []
    assert read_state(run_dir)["status"] == "cancelled"


def test_terminate_tree_reports_a_local_ray_cluster(tmp_path: Path) -> None:
    """A ``raylet`` among the run's processes means the run started Ray (cancel then runs ``ray stop``).

    The process is a renamed ``sleep``: a real ``ray stop --force`` here would stop other Ray clusters.
    """
    import shutil
    import subprocess

    from console.runs.cancel import terminate_tree

    fake = tmp_path / "raylet"
    shutil.copy(shutil.which("sleep"), fake)
    env = dict(os.environ, RL_CONSOLE_RUN_ID="fake-ray-run")
    proc = subprocess.Popen([str(fake), "600"], env=env, start_new_session=True)
    try:
        wait_for(lambda: bool(run_processes("fake-ray-run")), 10, "the fake raylet")
        assert terminate_tree("fake-ray-run", set(), grace=0.5) is True
        assert proc.wait(5) is not None and run_processes("fake-ray-run") == []
    finally:
        proc.kill()
        proc.wait()
