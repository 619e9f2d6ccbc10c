"""Fault injection: over 20 seeded runs shaped like the demo (train, dump, check; tiny steps sharing one
"repo" checkout), SIGKILL the supervisor, the running step's process group, the console that launches
the run or the console attached to it, at random moments. Every run must end with exactly one verdict
(state.json and triage.json agree), its evidence in its own folder, and no process of it left running.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from runs_support import PY, ROOT, reap_runs

from console.monitor.procs import run_marker, run_processes
from console.rundir.state import TERMINAL, read_state
from console.runs.recover import current_state

pytestmark = pytest.mark.timeout(600)

SEEDS = range(20)
FAULTS = ("supervisor", "step", "launching_console", "attached_console", "none")


def demo_like_plan(repo: Path, train_s: float) -> dict:
    train = (
        "import json, os, sys, time\n"
        "run = os.path.basename(os.environ['RL_CONSOLE_RUN_DIR'])\n"
        "os.makedirs('out/tb', exist_ok=True)\n"
        "for i in range(1, 4):\n"
        "    print(f'Step {i}/3', flush=True)\n"
        f"    time.sleep({train_s / 3:.3f})\n"
        "json.dump({'train/loss': {'1': 0.5}, 'run': {'1': run}}, open('out/metrics.json', 'w'))\n"
        "open('out/tb/events.out.tfevents.1.host', 'w').write(run)\n"
        "print('Max number of steps has been reached, stopping training early', flush=True)\n"
    )
    dump = "import time; time.sleep(0.2); print('dumped')"
    check = (
        "import json; d = json.load(open('out/metrics.json')); assert d['train/loss']['1'] < 1; print('PASS')"
    )
    common = {"env": {}, "cwd": str(repo)}
    return {
        "steps": [
            {
                "name": "train",
                "argv": [PY, "-u", "-c", train],
                "kind": "train",
                "deliverable": "framework_run",
                "metrics_json": "out/metrics.json",
                "tb_dir": "out/tb",
                **common,
            },
            {
                "name": "dump",
                "argv": [PY, "-u", "-c", dump],
                "kind": "metrics",
                "deliverable": "metrics",
                **common,
            },
            {
                "name": "check",
                "argv": [PY, "-u", "-c", check],
                "kind": "metrics",
                "deliverable": "metrics",
                **common,
            },
        ]
    }


LAUNCH = """
import json, sys
from console.runs.launch import start_run
from console.spec import RunSpec
plan = json.loads(sys.argv[2])
run_dir = start_run(RunSpec(framework="demo", runs_dir=sys.argv[1]), plan=plan)
print(run_dir, flush=True)
"""


def _launch(runs: Path, plan: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [PY, "-c", LAUNCH, str(runs), json.dumps(plan)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )


def _new_run(runs: Path, before: set[str], timeout: float = 20.0) -> Path | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fresh = (
            [p for p in runs.iterdir() if p.name not in before and not p.name.startswith(".")]
            if runs.is_dir()
            else []
        )
        if fresh and (fresh[0] / "state.json").exists():
            return fresh[0]
        time.sleep(0.02)
    return None


def _kill_supervisor(run_dir: Path) -> None:
    pid = read_state(run_dir).get("supervisor_pid")
    if pid:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _kill_step(run_dir: Path) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any(
        st["status"] == "running" and st.get("pgid") for st in read_state(run_dir)["steps"]
    ):
        time.sleep(0.01)
    for st in read_state(run_dir)["steps"]:
        if st["status"] == "running" and st.get("pgid"):
            with contextlib.suppress(OSError):
                os.killpg(st["pgid"], signal.SIGKILL)


def _settle(run_dir: Path, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = current_state(run_dir)
        if state.get("status") in TERMINAL:
            return state
        time.sleep(0.1)
    raise AssertionError(f"{run_dir.name} never ended: {read_state(run_dir)}")


def _leftovers(run_dir: Path) -> list[int]:
    state = read_state(run_dir)
    pgids = [int(s["pgid"]) for s in state["steps"] if s.get("pgid")]
    procs = [p.pid for p in run_processes(run_marker(run_dir), roots=[])]
    for pgid in pgids:
        for proc in psutil.process_iter(["pid"]):
            with contextlib.suppress(OSError, psutil.Error):
                if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                    procs.append(proc.pid)
    sup = state.get("supervisor_pid")
    with contextlib.suppress(psutil.Error):
        if (
            sup
            and psutil.Process(sup).status() != psutil.STATUS_ZOMBIE
            and "console.runs.supervisor" in psutil.Process(sup).cmdline()
        ):
            procs.append(sup)
    return procs


@pytest.mark.parametrize("seed", SEEDS)
def test_every_run_ends_with_one_verdict_its_evidence_and_nothing_running(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    rng = random.Random(seed)
    base = tmp_path_factory.getbasetemp() / "faults"
    runs, repo = base / "runs", base / "repo"  # one checkout shared by all 20 runs, like a real one
    repo.mkdir(parents=True, exist_ok=True)
    before = {p.name for p in runs.iterdir()} if runs.is_dir() else set()
    fault = FAULTS[seed % len(FAULTS)] if seed < len(FAULTS) else rng.choice(FAULTS)
    delay = rng.uniform(0.0, 2.0)
    if fault == "step":
        delay = rng.uniform(0.0, 0.8)  # then the next running step's group is killed
    launcher = _launch(runs, demo_like_plan(repo, train_s=rng.uniform(0.3, 1.2)))
    attached: subprocess.Popen | None = None
    try:
        if fault == "launching_console":
            time.sleep(rng.uniform(0.1, 1.0))
            with contextlib.suppress(OSError):
                os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait(10)
            run_dir = _new_run(runs, before, timeout=2.0)
            if run_dir is None:
                # at most an empty reserved folder (invisible: no state.json) or a hidden staging one
                assert not runs.is_dir() or all(
                    not any(p.iterdir())
                    for p in runs.iterdir()
                    if p.name not in before and not p.name.startswith(".")
                )
                return  # killed before the run existed: nothing to settle
        else:
            run_dir = _new_run(runs, before)
            assert run_dir is not None, launcher.stderr.read() if launcher.stderr else ""
            if fault == "attached_console":
                attached = subprocess.Popen(
                    [PY, "-m", "console", "attach", str(run_dir), "--headless"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    cwd=ROOT,
                )
            time.sleep(delay)
            if fault == "supervisor":
                _kill_supervisor(run_dir)
            elif fault == "step":
                _kill_step(run_dir)
            elif fault == "attached_console" and attached is not None:
                attached.kill()
        state = _settle(run_dir)
        time.sleep(0.3)  # a step's wrapper that outlived its supervisor writes its exit file and leaves
        state = _settle(run_dir)
        print(
            f"seed {seed}: {fault} after {delay:.2f}s -> {state['verdict']} {state.get('error') or ''} "
            f"{[s['status'] for s in state['steps']]}"
        )
        # one verdict, the same everywhere
        assert state["verdict"] in ("Pass", "Fail", "Blocked", "Incomplete", "Cancelled"), state
        triage = json.loads((run_dir / "triage.json").read_text())
        assert triage["verdict"] == state["verdict"], (fault, state, triage["verdict"])
        assert all(s["status"] in ("passed", "failed", "skipped", "cancelled") for s in state["steps"]), state
        if fault == "none":
            assert state["verdict"] in ("Pass", "Fail"), state
        # evidence: copied for the train step when it passed, and this run's own
        train = state["steps"][0]
        if train["status"] == "passed":
            copy = run_dir / "evidence/01-train/metrics.json"
            assert copy.is_file(), (fault, train)
            assert json.loads(copy.read_text())["run"]["1"] == run_dir.name
            assert (run_dir / "evidence/01-train/tb/events.out.tfevents.1.host").read_text() == run_dir.name
        for copy in run_dir.glob("evidence/*/metrics.json"):
            assert json.loads(copy.read_text())["run"]["1"] == run_dir.name, "another run's evidence"
        # nothing of the run still runs
        deadline = time.monotonic() + 10
        while _leftovers(run_dir) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _leftovers(run_dir) == [], (fault, state)
    finally:
        for proc in (launcher, attached):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(5)
        reap_runs(runs)
