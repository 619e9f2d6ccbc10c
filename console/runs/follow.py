"""Headless follower: prints a run's progress and log lines, ends with the verdict.

Output, one line each: ``[step 3/30 eta 12s] demo-grpo`` progress lines (at most one per second),
every log line of every step as ``<step-name> | <text>`` (from the first line, so an attach after a
killed console loses and repeats nothing), ``[<step> <status>...]`` when a step ends, and finally
``Verdict: <verdict>`` (plus the primary failure class and advice when triage found one).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from console import exitcodes
from console.events import EventCursor
from console.fileio import read_json
from console.monitor.tailer import Tailer
from console.rundir.model import State
from console.rundir.state import STEP_TERMINAL, is_finished, read_state
from console.runs.recover import current_state

POLL_S = 0.2
PROGRESS_EVERY_S = 1.0


def format_progress(number: Any, ev_data: dict[str, Any], step_name: str | None) -> str:
    total = ev_data.get("total")
    where = f"{number}/{total}" if total else f"{number}"
    eta = ev_data.get("eta_s")
    eta_txt = f" eta {int(round(float(eta)))}s" if isinstance(eta, int | float) else ""
    return f"[step {where}{eta_txt}] {step_name or ''}".rstrip()


def format_verdict(run_dir: Path, state: State) -> list[str]:
    verdict = state.get("verdict") or "Incomplete"
    lines = [f"Verdict: {verdict}"]
    if verdict in ("Fail", "Blocked"):
        primary = read_json(run_dir / "triage.json", {}).get("primary") or {}
        if primary.get("class"):
            lines.append(
                f"Primary: {primary['class']} (line {primary.get('line')}): "
                f"{str(primary.get('evidence', '')).strip()[:200]}"
            )
            if primary.get("advice"):
                lines.append(f"Advice: {primary['advice']}")
        else:
            failed = [s for s in state.get("steps", []) if s.get("status") == "failed"]
            if failed:
                lines.append(f"Failed step: {failed[0]['name']} (exit code {failed[0].get('exit_code')})")
    return lines


class Follower:
    """Incremental follower; ``poll()`` returns the lines to print since the last call."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.index = 0  # step being followed
        self.tailer: Tailer | None = None
        self.events = EventCursor(self.run_dir / "events.jsonl")
        self.last_progress_t = 0.0
        self.last_progress: tuple[Any, ...] | None = None
        self.pending_progress: str | None = None
        self.done = False

    def _progress_lines(self, state: State) -> list[str]:
        steps = state.get("steps", [])
        current = state.get("current_step") or 0
        running = steps[current]["name"] if 0 <= current < len(steps) else None
        for ev in self.events.read():
            if ev.type == "progress":
                # a progress payload's "step" (training step) shares the JSON key with the plan step
                number = ev.data.get("step", ev.step if isinstance(ev.step, int) else None)
                name = ev.step if isinstance(ev.step, str) else running
                key = (name, number, ev.data.get("total"))
                if key != self.last_progress:
                    self.last_progress = key
                    self.pending_progress = format_progress(number, ev.data, name)
        now = time.monotonic()
        if self.pending_progress and now - self.last_progress_t >= PROGRESS_EVERY_S:
            self.last_progress_t = now
            line, self.pending_progress = self.pending_progress, None
            return [line]
        return []

    def poll(self) -> list[str]:
        if self.done:
            return []
        out: list[str] = []
        state = current_state(self.run_dir)
        steps = state.get("steps", [])
        finished = is_finished(state)
        out += self._progress_lines(state)
        while self.index < len(steps):
            step = steps[self.index]
            name = step["name"]
            if step["status"] == "pending" and not finished:
                break
            if step["status"] in ("skipped",) or (step["status"] == "pending" and finished):
                out.append(f"[{name} skipped: {step.get('reason') or 'not run'}]")
                self.index += 1
                continue
            if self.tailer is None:
                self.tailer = Tailer(self.run_dir / step["log"], emit_partial=False)
            out += [f"{name} | {line.text}" for line in self.tailer.poll()]
            if step["status"] not in STEP_TERMINAL:
                break
            while more := self.tailer.poll():  # the step ended: its log is complete, drain it
                out += [f"{name} | {line.text}" for line in more]
            if self.tailer.pending_text:
                out.append(f"{name} | {self.tailer.pending_text}")
            self.tailer.close()
            self.tailer = None
            out.append(f"[{name} {step['status']} exit code {step.get('exit_code')}]")
            self.index += 1
        if finished and self.index >= len(steps):
            if self.pending_progress:
                out.append(self.pending_progress)
                self.pending_progress = None
            out += format_verdict(self.run_dir, state)
            self.done = True
        return out


def follow_run(
    run_dir: Path, out: TextIO | None = None, stop: threading.Event | None = None, poll_s: float = POLL_S
) -> int:
    """Print the run until it ends (or ``stop`` is set); return the exit code for its verdict."""
    out = out or sys.stdout
    if read_state(Path(run_dir)).get("launcher") == "slurm":
        from console.runs.slurm.backend import start_follower

        start_follower(Path(run_dir))  # reattach: no-op while one runs or once the job has ended
    follower = Follower(run_dir)
    while True:
        lines = follower.poll()
        if lines:
            out.write("\n".join(lines) + "\n")
            out.flush()
        if follower.done:
            return exitcodes.for_verdict(read_state(Path(run_dir)).get("verdict"))
        if stop is not None and stop.is_set():
            return exitcodes.FAIL
        time.sleep(poll_s)
