"""End to end in a real tmux: `rl-console demo` until Pass, kill the console, reopen, run listed."""

from __future__ import annotations

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
