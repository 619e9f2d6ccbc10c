"""Run a small Python probe in a subprocess (argv list, given env, timeout) and read its JSON answer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MARKER = "RLC-DOCTOR "


@dataclass
class ProbeResult:
    returncode: int | None
    payload: dict[str, Any] | None  # the last `RLC-DOCTOR {...}` line, parsed
    stderr_tail: str
    timed_out: bool = False
    error: str | None = None  # could not start

    def problem(self) -> str:
        if self.error:
            return self.error
        if self.timed_out:
            return "timed out"
        tail = self.stderr_tail.strip().splitlines()
        return tail[-1] if tail else f"exit code {self.returncode}, no answer"


def _kill_group(proc: subprocess.Popen[str], grace: float = 5.0) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def run_probe(
    argv: list[str], env: Mapping[str, str], cwd: str | None, timeout: float, stderr_limit: int = 4000
) -> ProbeResult:
    """Run `argv`; the probe prints `RLC-DOCTOR <json>` lines on stdout. Kills its whole group on timeout.
    `stderr_tail` keeps the last `stderr_limit` characters of stderr."""
    if cwd is not None and not os.path.isdir(cwd):
        cwd = None
    try:
        proc = subprocess.Popen(
            argv,
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as exc:
        return ProbeResult(None, None, "", error=f"cannot start {argv[0]}: {exc}")
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        timed_out = True
    payload = None
    for line in out.splitlines():
        if line.startswith(MARKER):
            try:
                payload = json.loads(line[len(MARKER) :])
            except json.JSONDecodeError:
                continue
    return ProbeResult(proc.returncode, payload, err[-stderr_limit:], timed_out)
