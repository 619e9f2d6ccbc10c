"""End to end in a real tmux: `rl-console demo` until Pass, kill the console, reopen, run listed."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.tmux, pytest.mark.slow, pytest.mark.timeout(240),
              pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")]

BIN = Path(sys.executable).parent / "rl-console"


def capture(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True,
                          check=False).stdout


def wait_screen(session: str, needle: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = capture(session)
        if needle in text:
            return text
        time.sleep(0.5)
    raise AssertionError(f"{needle!r} not on screen after {timeout}s:\n{text}")


def start(session: str, env: dict[str, str], *args: str) -> None:
    cmd = ["env", *(f"{k}={v}" for k, v in env.items()), str(BIN), *args]
    subprocess.run(["tmux", "new-session", "-d", "-x", "100", "-y", "30", "-s", session,
                    shlex.join(cmd)], check=True)


def test_demo_in_tmux_survives_console_restart(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    env = {"RL_CONSOLE_RUNS": str(runs), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "TERM": "tmux-256color",
           "PATH": os.environ.get("PATH", "")}
    first, second = f"rlc-{uuid.uuid4().hex[:8]}", f"rlc-{uuid.uuid4().hex[:8]}"
    try:
        start(first, env, "demo")
        screen = wait_screen(first, "Pass", timeout=150)
        run_ids = [p.name for p in runs.iterdir() if p.is_dir()]
        assert len(run_ids) == 1 and run_ids[0] in screen
        subprocess.run(["tmux", "kill-session", "-t", first], check=True)
        start(second, env)
        screen = wait_screen(second, run_ids[0], timeout=30)
        assert "Pass" in screen
        assert "runs keep going" in screen
    finally:
        for s in (first, second):
            subprocess.run(["tmux", "kill-session", "-t", s], capture_output=True, check=False)


def tmux(sock: str, *args: str, check: bool = True) -> str:
    return subprocess.run(["tmux", "-L", sock, *args], capture_output=True, text=True, check=check).stdout


def wait_pane(sock: str, target: str, needles: tuple[str, ...], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = tmux(sock, "capture-pane", "-p", "-t", target, check=False)
        if all(n in text for n in needles):
            return text
        time.sleep(0.3)
    raise AssertionError(f"{needles!r} not all on {target} after {timeout}s:\n{text}")


def test_newcomer_from_rl_console_to_report_with_notification(tmp_path: Path) -> None:
    """A newcomer's keys at 80x24: `rl-console`, n, to the variants, tick the NaN demo, ctrl+l; while
    they look at another tmux window the failure is announced there (tmux display-message, seen on
    the status line of a real attached client, and the `status` segment); back in the console the
    Findings tab explains it (cause, advice, evidence) and r shows the report."""
    runs = tmp_path / "runs"
    sock, viewer = f"rlc-{uuid.uuid4().hex[:8]}", f"rlv-{uuid.uuid4().hex[:8]}"
    env = {"RL_CONSOLE_RUNS": str(runs), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "TERM": "tmux-256color",
           "PATH": f"{BIN.parent}:{os.environ.get('PATH', '')}", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    console = shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), str(BIN)])
    status_loop = shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), "sh", "-c",
                              f"while :; do clear; {shlex.quote(str(BIN))} status; sleep 0.5; done"])
    try:
        tmux(sock, "new-session", "-d", "-x", "80", "-y", "24", "-s", "work", "-n", "console", console)
        tmux(sock, "new-window", "-d", "-t", "work", "-n", "other", status_loop)
        # a real client attached to the session (through a second server), so the status line exists
        subprocess.run(["tmux", "-L", viewer, "new-session", "-d", "-x", "80", "-y", "25", "-s", "eyes",
                        shlex.join(["env", "-u", "TMUX", "tmux", "-L", sock, "attach", "-t", "work"])], check=True)
        wait_pane(sock, "work:console", ("Runs", "q Quit"), timeout=30)
        tmux(sock, "send-keys", "-t", "work:console", "n")
        wait_pane(sock, "work:console", ("What did your change touch?", "needs on demo"), timeout=15)
        tmux(sock, "send-keys", "-t", "work:console", "Tab")  # to the levels: the guide says why
        wait_pane(sock, "work:console", ("Level 0: Demo GRPO smoke", "proves:"), timeout=10)
        tmux(sock, "send-keys", "-t", "work:console", "Tab")  # to the variants, with their meaning
        wait_pane(sock, "work:console", ("Variant nan: Inject a NaN loss",), timeout=10)
        tmux(sock, "send-keys", "-t", "work:console", "Space")
        wait_pane(sock, "work:console", ("Your run: demo, Level 0, variants: nan",), timeout=10)
        tmux(sock, "send-keys", "-t", "work:console", "C-l")
        wait_pane(sock, "work:console", ("demo-l0-nan", "1 Log"), timeout=60)
        tmux(sock, "select-window", "-t", "work:other")  # the newcomer looks elsewhere
        wait_pane(viewer, "eyes", ("rl-console: run", "demo-l0-nan failed (Fail)"), timeout=180)
        wait_pane(viewer, "eyes", ("rl FAIL demo-l0-nan",), timeout=10)  # the other window: `status`
        tmux(sock, "select-window", "-t", "work:console")
        wait_pane(sock, "work:console", ("Run over:", "next: r report"), timeout=30)
        tmux(sock, "send-keys", "-t", "work:console", "5")
        wait_pane(sock, "work:console", ("metric_failure", "cause:", "advice: A metric check failed"), timeout=15)
        tmux(sock, "send-keys", "-t", "work:console", "r")
        wait_pane(sock, "work:console", ("Result: Fail", "Requested coverage: Level 0; variants: nan"), timeout=30)
        spec = json.loads(next(runs.iterdir()).joinpath("spec.json").read_text())
        assert spec["variants"] == ["nan"]
    finally:
        for s in (viewer, sock):
            subprocess.run(["tmux", "-L", s, "kill-server"], capture_output=True, check=False)
