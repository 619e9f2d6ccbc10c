"""Headless consoles: SIGKILL mid-run then attach (no lost, no duplicated lines), two consoles at once,
``run --detach``, ``ls``/``show`` and bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from runs_support import PY, ROOT, cli, reap_runs, step, wait_finished

from console.runs.launch import start_run
from console.spec import RunSpec

pytestmark = pytest.mark.timeout(120)

N_LINES = 40
CHATTY = f"import time\nfor i in range({N_LINES}):\n    print(f'line {{i:03d}} of chatty', flush=True)\n    time.sleep(0.06)"


@pytest.fixture
def runs_dir(tmp_path: Path):
    d = tmp_path / "runs"
    yield d
    assert reap_runs(d) == [], "processes survived"


def log_lines(output: str, step_name: str) -> list[str]:
    prefix = f"{step_name} | "
    return [line[len(prefix) :] for line in output.splitlines() if line.startswith(prefix)]


def console(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [PY, "-m", "console", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )


def test_sigkill_console_then_attach_loses_and_repeats_nothing(runs_dir: Path, tmp_path: Path) -> None:
    plan = {"steps": [step("chatty", CHATTY), step("second", "print('second step line')")]}
    run_dir = start_run(RunSpec(runs_dir=str(runs_dir)), plan=plan)
    first = console("attach", run_dir.name, "--runs-dir", str(runs_dir), "--headless")
    seen: list[str] = []
    assert first.stdout is not None
    while len(seen) < 8:  # the console is mid-run: some lines shown, the step still going
        seen.append(first.stdout.readline().rstrip("\n"))
    os.kill(first.pid, signal.SIGKILL)
    first.wait(10)
    before = log_lines("\n".join(seen), "chatty")
    assert before and len(before) < N_LINES
    # the run goes on without any console
    again = cli("attach", run_dir.name, "--runs-dir", str(runs_dir), "--headless")
    assert again.returncode == 0, again.stderr
    after = log_lines(again.stdout, "chatty")
    expected = [f"line {i:03d} of chatty" for i in range(N_LINES)]
    assert after == expected  # every line exactly once, in order
    assert after[: len(before)] == before  # what the killed console showed is the same history
    assert log_lines(again.stdout, "second") == ["second step line"]
    assert again.stdout.rstrip().splitlines()[-1] == "Verdict: Pass"
    assert wait_finished(run_dir)["verdict"] == "Pass"


def test_two_consoles_follow_one_run_and_share_the_store(runs_dir: Path) -> None:
    plan_step = step("chatty", CHATTY)
    run_dir = start_run(RunSpec(runs_dir=str(runs_dir)), plan={"steps": [plan_step]})
    a = console("attach", run_dir.name, "--runs-dir", str(runs_dir), "--headless")
    b = console("attach", run_dir.name, "--runs-dir", str(runs_dir), "--headless")
    # meanwhile both "consoles" also start runs into the same store
    extra = [
        console("run", "--framework", "demo", "--runs-dir", str(runs_dir), "--detach", "--no-doctor")
        for _ in range(2)
    ]
    out_a, _ = a.communicate(timeout=60)
    out_b, _ = b.communicate(timeout=60)
    for p in extra:
        p.communicate(timeout=60)
        assert p.returncode == 0
    expected = [f"line {i:03d} of chatty" for i in range(N_LINES)]
    assert log_lines(out_a, "chatty") == expected == log_lines(out_b, "chatty")
    assert a.returncode == b.returncode == 0
    listed = json.loads(cli("ls", "--runs-dir", str(runs_dir), "--json").stdout)
    assert len(listed) == 3 and len({r["id"] for r in listed}) == 3
    for row in listed:
        json.loads((Path(row["path"]) / "state.json").read_text())  # never torn
    for row in listed:
        if row["id"] != run_dir.name:
            cli("cancel", row["id"], "--runs-dir", str(runs_dir), "--grace", "1")


def test_detach_returns_at_once_and_show(runs_dir: Path) -> None:
    t0 = time.monotonic()
    res = cli("run", "--framework", "demo", "--runs-dir", str(runs_dir), "--detach", "--no-doctor")
    elapsed = time.monotonic() - t0
    assert res.returncode == 0, res.stderr
    run_id = res.stdout.split()[1]
    assert elapsed < 15  # interpreter start + plan; the demo itself takes longer
    shown = json.loads(cli("show", run_id, "--runs-dir", str(runs_dir), "--json").stdout)
    assert (
        shown["state"]["status"] in ("pending", "running")
        and shown["plan"]["steps"][0]["name"] == "demo-grpo"
    )
    text = cli("show", run_id[:20], "--runs-dir", str(runs_dir)).stdout
    assert "demo-grpo" in text and run_id in text
    assert cli("cancel", run_id, "--runs-dir", str(runs_dir), "--grace", "1").returncode == 0
    assert json.loads(cli("ls", "--runs-dir", str(runs_dir), "--json").stdout)[0]["verdict"] == "Cancelled"


def test_bad_input_is_one_line_exit_2(runs_dir: Path) -> None:
    for args in (["show", "nope"], ["attach", "nope"], ["cancel", "nope"]):
        res = cli(*args, "--runs-dir", str(runs_dir))
        assert res.returncode == 2 and res.stderr.count("\n") == 1 and "no run 'nope'" in res.stderr
    res = cli("replay", str(runs_dir / "missing.log"), "--runs-dir", str(runs_dir))
    assert res.returncode == 2 and "no such file" in res.stderr
