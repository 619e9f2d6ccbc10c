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

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed"),
]

BIN = Path(sys.executable).parent / "rl-console"


def tmux(sock: str, *args: str, check: bool = True) -> str:
    """tmux on the test's own server (``-L sock``): never the user's, never another test's."""
    return subprocess.run(["tmux", "-L", sock, *args], capture_output=True, text=True, check=check).stdout


def wait_screen(sock: str, session: str, needle: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = tmux(sock, "capture-pane", "-p", "-t", session, check=False)
        if needle in text:
            return text
        time.sleep(0.5)
    raise AssertionError(f"{needle!r} not on screen after {timeout}s:\n{text}")


def start(sock: str, session: str, env: dict[str, str], *args: str) -> None:
    cmd = ["env", *(f"{k}={v}" for k, v in env.items()), str(BIN), *args]
    tmux(sock, "new-session", "-d", "-x", "100", "-y", "30", "-s", session, shlex.join(cmd))


def wait_gone(pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"the console (pid {pid}) still runs {timeout}s after its tmux session was killed")


def test_demo_in_tmux_survives_console_restart(tmp_path: Path) -> None:
    """The console is killed with its tmux session (its process gone, the run goes on) and a new
    console in a new session finds the run. The test's own tmux server (``-L``) keeps a placeholder
    session, so killing the console's session does not take the server down while the next
    session's client connects (that race failed the test under load: "server exited unexpectedly")."""
    runs = tmp_path / "runs"
    env = {
        "RL_CONSOLE_RUNS": str(runs),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "TERM": "tmux-256color",
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    sock = f"rlc-{uuid.uuid4().hex[:8]}"
    try:
        tmux(sock, "new-session", "-d", "-s", "keep", "sleep 600")  # the placeholder
        start(sock, "first", env, "demo")
        console_pid = int(tmux(sock, "display-message", "-p", "-t", "first", "#{pane_pid}").strip())
        screen = wait_screen(sock, "first", "Pass", timeout=150)
        run_ids = [p.name for p in runs.iterdir() if p.is_dir()]
        assert len(run_ids) == 1 and run_ids[0] in screen
        tmux(sock, "kill-session", "-t", "first")
        wait_gone(console_pid, timeout=15)  # the console really ended
        assert "first" not in tmux(sock, "list-sessions", "-F", "#{session_name}")
        start(sock, "second", env)
        screen = wait_screen(sock, "second", run_ids[0], timeout=30)
        assert "Pass" in screen
        assert "runs keep going" in screen
    finally:
        tmux(sock, "kill-server", check=False)


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
    env = {
        "RL_CONSOLE_RUNS": str(runs),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "TERM": "tmux-256color",
        "PATH": f"{BIN.parent}:{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    console = shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), str(BIN)])
    status_loop = shlex.join(
        [
            "env",
            *(f"{k}={v}" for k, v in env.items()),
            "sh",
            "-c",
            f"while :; do clear; {shlex.quote(str(BIN))} status; sleep 0.5; done",
        ]
    )
    try:
        tmux(sock, "new-session", "-d", "-x", "80", "-y", "24", "-s", "work", "-n", "console", console)
        tmux(sock, "new-window", "-d", "-t", "work", "-n", "other", status_loop)
        # a real client attached to the session (through a second server), so the status line exists
        subprocess.run(
            [
                "tmux",
                "-L",
                viewer,
                "new-session",
                "-d",
                "-x",
                "80",
                "-y",
                "25",
                "-s",
                "eyes",
                shlex.join(["env", "-u", "TMUX", "tmux", "-L", sock, "attach", "-t", "work"]),
            ],
            check=True,
        )
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
        wait_pane(
            sock, "work:console", ("metric_failure", "cause:", "advice: A metric check failed"), timeout=15
        )
        tmux(sock, "send-keys", "-t", "work:console", "r")
        wait_pane(
            sock, "work:console", ("Result: Fail", "Requested coverage: Level 0; variants: nan"), timeout=30
        )
        spec = json.loads(next(runs.iterdir()).joinpath("spec.json").read_text())
        assert spec["variants"] == ["nan"]
    finally:
        for s in (viewer, sock):
            subprocess.run(["tmux", "-L", s, "kill-server"], capture_output=True, check=False)
