"""The detached supervisor of one run: ``python -m console.runs.supervisor RUN_DIR``.

Runs the plan's steps in order, each through ``console.runs.stepwrap`` in its own session (stdin
/dev/null, output to ``logs/NN-<step>.log``), records them in ``state.json`` and publishes events;
after a failure the remaining steps are skipped; a cancel escalates SIGINT -> SIGTERM -> SIGKILL
over the whole tree; at the end the verdict is decided once (``console.runs.finalize``).

Secrets arrive over stdin, never through the environment (``/proc/<supervisor>/environ`` holds
none). A full disk ends the run Blocked (``no_space``): a small reserve file is freed to write it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from console.events import Event, EventBus
from console.monitor.procs import RUN_ID_ENV, process_create_time, run_marker
from console.rundir.model import State
from console.rundir.state import STATUS_BY_VERDICT, read_state, update_state
from console.runs.cancel import mark_cancelled, running_groups, stop_local_ray, terminate_tree
from console.runs.finalize import (
    collect_evidence,
    disk_nearly_full,
    evidence_snapshot,
    free_reserve,
    make_reserve,
    no_space_primary,
    record_verdict,
)
from console.runs.pipeline import Pipeline, decide_verdict, final_triage, step_reason
from console.runs.stepwrap import exit_status, read_exit, write_exit

TICK_S = 0.2
STATE_CHECK_S = 0.5
COMPACT_CHECK_S = 60.0
COMPACT_ENV = "RL_CONSOLE_EVENTS_COMPACT_BYTES"  # events.jsonl size that triggers a compaction


def read_secrets() -> dict[str, Any]:
    """The launcher's secrets from stdin (a pipe, read to its end), then stdin becomes /dev/null."""
    data: Any = {}
    with contextlib.suppress(OSError, ValueError):
        if sys.stdin is not None and not sys.stdin.isatty():
            raw = sys.stdin.buffer.read()
            data = json.loads(raw) if raw else {}
    with contextlib.suppress(OSError):
        fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(fd, 0)
        os.close(fd)
    return data if isinstance(data, dict) else {}


class Supervisor:
    def __init__(self, run_dir: Path, secrets: dict[str, Any] | None = None) -> None:
        self.run_dir = run_dir.resolve()
        self.plan: dict[str, Any] = json.loads((self.run_dir / "plan.json").read_text(encoding="utf-8"))
        self.steps: list[dict[str, Any]] = self.plan["steps"]
        self.spec: dict[str, Any] = self.plan.get("spec") or {}
        self.secrets: dict[str, Any] = secrets or {}
        self.no_space: str | None = None
        self.bus = EventBus(self.run_dir / "events.jsonl")
        self.pipeline = Pipeline(
            self.run_dir, str(self.spec.get("framework") or "unknown"), self.bus, self.plan
        )
        self.cancelled = False
        self.saw_ray = False
        self._signalled = False

    # ------------------------------------------------------------------ helpers
    def _on_signal(self, _signum: int, _frame: object) -> None:
        self._signalled = True

    def _cancel_wanted(self) -> bool:
        if self._signalled:
            return True
        try:
            return bool(read_state(self.run_dir).get("cancel_requested"))
        except (OSError, ValueError):
            return False

    def _publish(self, type_: str, step: str | None, **data: Any) -> None:
        with contextlib.suppress(Exception):
            self.bus.publish(Event(type_, step, data))

    def _step_env(self, step: dict[str, Any]) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.secrets.get("base_env") or {})
        secret_env = (self.secrets.get("env") or {}).get(step["name"], {})
        for key, value in (step.get("env") or {}).items():
            env[key] = secret_env.get(key, value)
        for key in step.get("unset") or []:
            env.pop(key, None)
        env[RUN_ID_ENV] = run_marker(self.run_dir)
        env["RL_CONSOLE_RUN_DIR"] = str(self.run_dir)
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def _argv(self, step: dict[str, Any]) -> list[str]:
        argv = list(step["argv"])
        for index, value in ((self.secrets.get("argv") or {}).get(step["name"]) or {}).items():
            argv[int(index)] = "".join(value) if isinstance(value, list) else str(value)
        return argv

    # ------------------------------------------------------------------ one step
    def _spawn(
        self, index: int, step: dict[str, Any], log: Path, exit_file: Path
    ) -> subprocess.Popen[bytes] | None:
        """Start the step under the state lock (so a cancel sees either no step or its pid)."""
        proc: subprocess.Popen[bytes] | None = None

        def start(state: State) -> None:
            nonlocal proc
            if state.get("cancel_requested") or self._signalled:
                return
            argv = [sys.executable, "-m", "console.runs.stepwrap", str(exit_file), "--", *self._argv(step)]
            with open(log, "ab", buffering=0) as out:
                try:
                    proc = subprocess.Popen(
                        argv,
                        cwd=step.get("cwd") or None,
                        env=self._step_env(step),
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                        close_fds=True,
                    )
                except OSError as exc:
                    out.write(f"rl-console: cannot start step {step['name']!r}: {exc}\n".encode())
                    write_exit(exit_file, 127)
            entry = state["steps"][index]
            entry.update(
                {
                    "status": "running",
                    "started": time.time(),
                    "pid": proc.pid if proc else None,
                    "pgid": proc.pid if proc else None,
                    "create_time": process_create_time(proc.pid) if proc else None,
                }
            )
            state["current_step"] = index

        update_state(self.run_dir, start)
        return proc

    def run_step(self, index: int, step: dict[str, Any]) -> int | None:
        """Run one step; its exit code, or None when a cancel came first."""
        name = step["name"]
        log = self.run_dir / read_state(self.run_dir)["steps"][index]["log"]
        log.parent.mkdir(parents=True, exist_ok=True)
        exit_file = log.with_suffix(".exit")
        started_at = time.time()
        before: dict[str, list[int]] | None = None
        with contextlib.suppress(OSError):
            before = evidence_snapshot(self.run_dir, step)
            snap = before
            update_state(self.run_dir, lambda s: s["steps"][index].update({"evidence_before": snap}))
        proc = self._spawn(index, step, log, exit_file)
        if proc is None and not exit_file.exists():
            return None
        self._publish("step_state", name, status="running", exit_code=None, reason=None)
        with contextlib.suppress(Exception):
            self.pipeline.start_step(name, log, proc.pid if proc is not None else None)
        last_check = 0.0
        last_compact = time.monotonic()
        while proc is not None and proc.poll() is None:
            with contextlib.suppress(Exception):
                self.pipeline.tick()
            now = time.monotonic()
            if now - last_compact >= COMPACT_CHECK_S:
                last_compact = now
                with contextlib.suppress(Exception):
                    self.bus.compact_if_large(int(os.environ.get(COMPACT_ENV) or 0))
            if now - last_check >= STATE_CHECK_S:
                last_check = now
                if not self.cancelled and self._cancel_wanted():
                    self.cancelled = True
                    self._cancel_now()
            time.sleep(TICK_S)
        code = read_exit(exit_file)
        if code is None:
            code = exit_status(proc.returncode) if proc is not None else 127
            write_exit(exit_file, code)
        if not self.cancelled and self._cancel_wanted():
            self.cancelled = True
        if self.cancelled:  # the step's own descendants may linger (own session): clean them up too
            self._cancel_now(grace=1.0)
        result = None
        with contextlib.suppress(Exception):
            result = self.pipeline.end_step(code)
        evidence: list[str] = []
        try:
            evidence = collect_evidence(self.run_dir, index, step, since=started_at, before=before)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                self.no_space = f"copying the evidence of step {name}: {exc}"
            else:
                print(f"rl-console supervisor: evidence of {name} not copied: {exc}", file=sys.stderr)
        if self.no_space is None and exit_file.with_suffix(".nospace").exists():
            self.no_space = f"step {name}'s log could not be written (exit code {code})"
        elif self.no_space is None and code != 0 and disk_nearly_full(self.run_dir):
            self.no_space = f"step {name} exited with code {code} and the run folder's disk is full"
        status = "cancelled" if self.cancelled else ("passed" if code == 0 else "failed")
        reason = step_reason(result) if status == "failed" else None
        if status == "failed" and self.no_space and not reason:
            reason = f"no_space: {self.no_space}"

        def done(state: State) -> None:
            state["steps"][index].update(
                {
                    "status": status,
                    "exit_code": code,
                    "ended": time.time(),
                    "reason": reason,
                    "evidence": evidence,
                }
            )

        if self.no_space:
            free_reserve(self.run_dir)

        update_state(self.run_dir, done)
        self._publish("step_state", name, status=status, exit_code=code, reason=reason)
        return code

    def _cancel_now(self, grace: float | None = None) -> None:
        if grace is None:
            try:
                grace = float(read_state(self.run_dir).get("cancel_grace") or 10.0)
            except (OSError, ValueError):
                grace = 10.0
        marker = run_marker(self.run_dir)
        pgids = running_groups(read_state(self.run_dir), marker)
        self.saw_ray = terminate_tree(marker, pgids, grace, exclude={os.getpid()}) or self.saw_ray

    # ------------------------------------------------------------------ the run
    def run(self) -> int:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        make_reserve(self.run_dir)
        update_state(
            self.run_dir,
            lambda s: s.update(
                {
                    "status": "running",
                    "started": time.time(),
                    "supervisor_pid": os.getpid(),
                    "supervisor_create_time": process_create_time(os.getpid()),
                }
            ),
        )
        self._publish("run_state", None, status="running", verdict=None)
        stop_reason: str | None = None
        for index, step in enumerate(self.steps):
            if self.cancelled or self._cancel_wanted():
                self.cancelled = True
                break
            if stop_reason is not None:
                self._skip(index, step, stop_reason)
                continue
            code = self.run_step(index, step)
            if code is None:
                self.cancelled = True
                break
            if self.cancelled or self.no_space:
                break
            if code != 0 and step.get("on_failure", "stop") != "continue":
                stop_reason = f"step {step['name']} failed (exit code {code})"
        if self.cancelled and self.saw_ray:
            stop_local_ray()
        return self.finish()

    def _skip(self, index: int, step: dict[str, Any], reason: str) -> None:
        update_state(
            self.run_dir, lambda s: s["steps"][index].update({"status": "skipped", "reason": reason})
        )
        self._publish("step_state", step["name"], status="skipped", exit_code=None, reason=reason)

    def finish(self) -> int:
        """Decide the verdict once and record it: triage.json and the report first, state.json last
        (a reader that sees the run ended finds its verdict files)."""
        if self.no_space:
            return self.end_no_space(self.no_space)
        triage: dict[str, Any] | None = None
        if self.cancelled:
            verdict = "Cancelled"
            update_state(self.run_dir, _steps_cancelled)  # the verdict below sees the steps' end
        else:
            state = read_state(self.run_dir)
            triage = final_triage(self.run_dir, self.pipeline.step_results)  # as the Slurm follower does
            verdict = decide_verdict(state, self.steps, triage)
        try:
            record_verdict(self.run_dir, verdict, triage=triage)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
            return self.end_no_space(f"writing the verdict: {exc}")
        self._end_state(verdict)
        return 0

    def _end_state(self, verdict: str, error: str | None = None) -> None:
        def end(s: State) -> None:
            if verdict == "Cancelled":
                mark_cancelled(s)
            s.update(
                {"status": STATUS_BY_VERDICT.get(verdict, "failed"), "verdict": verdict, "ended": time.time()}
            )
            if error is not None:
                s["error"] = error

        update_state(self.run_dir, end)
        self._publish("run_state", None, status=STATUS_BY_VERDICT.get(verdict, "failed"), verdict=verdict)
        with contextlib.suppress(Exception):
            self.pipeline.close()
        self.bus.close()
        free_reserve(self.run_dir)

    def end_no_space(self, why: str) -> int:
        """The disk is full: stop what runs, free the reserve, end Blocked with class no_space."""
        free_reserve(self.run_dir)
        with contextlib.suppress(Exception):
            self._cancel_now(grace=2.0)
        primary = no_space_primary(f"No space left on device: {why}")

        def stop(s: State) -> None:
            now = time.time()
            for st in s.get("steps", []):
                if st["status"] == "running":
                    st.update({"status": "failed", "ended": now, "reason": f"no_space: {why}"})
                elif st["status"] == "pending":
                    st.update({"status": "skipped", "reason": "the disk is full (no_space)"})

        with contextlib.suppress(Exception):
            update_state(self.run_dir, stop)
        with contextlib.suppress(Exception):
            record_verdict(self.run_dir, "Blocked", primary=primary, reason="no_space")
        self._end_state("Blocked", error=f"no_space: {why}")
        return 0


def _steps_cancelled(state: State) -> None:
    """``mark_cancelled`` for the steps only: the run's own status is written last."""
    status, verdict, ended = state.get("status"), state.get("verdict"), state.get("ended")
    mark_cancelled(state)
    state.update({"status": status, "verdict": verdict, "ended": ended})


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m console.runs.supervisor RUN_DIR", file=sys.stderr)
        return 2
    secrets = read_secrets()
    sup = Supervisor(Path(args[0]), secrets)
    try:
        return sup.run()
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            return sup.end_no_space(str(exc))
        return _crashed(sup)
    except Exception:
        return _crashed(sup)


def _crashed(sup: Supervisor) -> int:
    traceback.print_exc(file=sys.stderr)
    free_reserve(sup.run_dir)
    with contextlib.suppress(Exception):
        sup._cancel_now(grace=2.0)
    with contextlib.suppress(Exception):
        record_verdict(sup.run_dir, "Incomplete", reason="supervisor crashed")
    with contextlib.suppress(Exception):
        update_state(
            sup.run_dir,
            lambda s: s.update(
                {
                    "status": "failed",
                    "verdict": "Incomplete",
                    "ended": time.time(),
                    "error": "supervisor crashed (see supervisor.log)",
                }
            ),
        )
    return 1


if __name__ == "__main__":
    sys.exit(main())
