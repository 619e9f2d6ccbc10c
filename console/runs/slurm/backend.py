"""The Slurm launcher backend: submit a plan, poll the job, cancel it, follow it to its verdict.

``submit`` writes the script into ``<run_dir>/slurm/`` and calls ``sbatch``; ``follow`` (detached:
``python -m console.runs.slurm.follow RUN_DIR``) keeps the run folder up to date until the job ends.
The job id lives in ``state.json`` (``slurm_job_id``), so any console can reattach later.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from console.events import Event, EventBus
from console.fileio import read_json
from console.rundir.lockfile import LockFile, is_locked
from console.rundir.model import State, StepState
from console.rundir.state import STATUS_BY_VERDICT, is_finished, read_state, update_state, write_json_atomic
from console.runs.finalize import primary_finding, record_verdict
from console.runs.pipeline import Pipeline, run_outcome, step_reason
from console.runs.sampling import SamplerThread
from console.runs.slurm import scheduler, states
from console.runs.slurm.gpu import NodeSampler
from console.runs.slurm.scheduler import JobRecord
from console.runs.slurm.script import SRUN_LOG_SUFFIX, Submission, render, step_file_stem
from console.runs.spawn import spawn_detached
from console.runs.stepwrap import read_exit
from console.spec import RunSpec

SLURM_DIR = "slurm"
FOLLOW_LOCK = "follow.lock"
FOLLOW_LOG = "follow.log"
CURSOR = "follow.json"  # how far the follower has published the logs (a restarted one goes on from there)
FOLLOW_LOCK_EXPIRY_S = 60.0  # a fallback follow lock not refreshed for this long is stale
TICK_S = 0.5  # the running step's log is read this often between Slurm polls
GIVE_UP_S = 600.0  # a follower stops after this long without an answer from Slurm


# ---- submit / poll / cancel -----------------------------------------------------------------
def write_submission(run_dir: Path, sub: Submission) -> dict[str, Any]:
    """Save the generated script, the submission line and ``submission.json`` (returned) in
    ``<run_dir>/slurm/``."""
    d = run_dir / SLURM_DIR
    d.mkdir(parents=True, exist_ok=True)
    (run_dir / "logs").mkdir(exist_ok=True)
    script = d / sub.script_name
    script.write_text(sub.script_text, encoding="utf-8")
    script.chmod(0o755)
    (d / "submit.sh").write_text(
        "#!/bin/bash\n# How rl-console submitted this run (secrets masked).\n" + sub.command_text() + "\n",
        encoding="utf-8",
    )
    record = {
        "mode": sub.mode,
        "script": f"{SLURM_DIR}/{sub.script_name}",
        "sbatch_args": sub.sbatch_args,
        "cwd": sub.cwd,
        "env": dict(sub.env),
        "warnings": sub.warnings,
    }
    write_json_atomic(d / "submission.json", record)
    return record


def submit(run_dir: Path, plan: Any, spec: RunSpec) -> str:
    """Generate, save and ``sbatch`` the plan; return the job id. The caller stores it in state.json."""
    run_dir = Path(run_dir).resolve()
    sub = render(run_dir, plan, spec)
    record = write_submission(run_dir, sub)
    job_id = scheduler.sbatch(sub.sbatch_args, env={**sub.env, **sub.secret_env}, cwd=sub.cwd or str(run_dir))
    write_json_atomic(
        run_dir / SLURM_DIR / "submission.json", {**record, "job_id": job_id, "submitted": time.time()}
    )
    return job_id


def poll(job_id: str) -> JobRecord:
    """The job's state: ``squeue`` first; ``scontrol show job`` for the exit code of a finished job;
    ``sacct`` when both have forgotten it (and accounting exists)."""
    rec = scheduler.squeue(job_id)
    if rec is None or rec.phase == "done":
        detail = scheduler.scontrol_job(job_id)
        if detail is not None:
            if rec is not None and not detail.nodes:
                detail.nodes = rec.nodes
            rec = detail
    rec = rec or scheduler.sacct(job_id)
    if rec is None:
        return JobRecord(
            job_id,
            "UNKNOWN",
            reason="the job is no longer known to squeue/scontrol and accounting (sacct) is not available",
            source="none",
        )
    return rec


def cancel_run(run_dir: Path) -> str | None:
    """Mark the run cancel-requested and ``scancel`` its job; returns the job id (None if never submitted)."""
    state = update_state(Path(run_dir), lambda s: s.update({"cancel_requested": True}))
    job_id = state.get("slurm_job_id")
    if job_id:
        scheduler.scancel(str(job_id))  # a finished job is not an error
    return job_id


# ---- following -------------------------------------------------------------------------------
class JobRecorder:
    """Brings one Slurm run's state.json/events.jsonl/triage.json up to date; ``step()`` is one poll.
    The steps' logs go through the local supervisor's pipeline and the verdict is the local one; the
    job state only adds what the logs cannot know (NODE_FAIL, PREEMPTED, TIMEOUT, a PENDING reason
    that never clears), per ``catalog/slurm.toml``."""

    def __init__(self, run_dir: Path, poll_s: float = 2.0) -> None:
        self.run_dir = Path(run_dir).resolve()
        self.poll_s = poll_s
        self.tick_s = min(TICK_S, poll_s)
        self.plan: dict[str, Any] = json.loads((self.run_dir / "plan.json").read_text(encoding="utf-8"))
        self.steps: list[dict[str, Any]] = self.plan.get("steps") or []
        spec = read_json(self.run_dir / "spec.json")
        self.spec = RunSpec.from_dict(spec) if spec is not None else RunSpec(launcher="slurm")
        self.mode = (read_json(self.run_dir / SLURM_DIR / "submission.json") or {}).get("mode", "srun")
        self.bus = EventBus(self.run_dir / "events.jsonl")
        self.last_job: tuple[str, str | None] | None = None  # the (state, reason) last recorded
        self.never_since: float | None = None
        self.scanned: list[tuple[str, int | None, float | None]] = [("pending", None, None)] * len(self.steps)
        self.out_offset = 0
        self.scheduler_message: str | None = None
        self.gpu = NodeSampler.from_spec(self.spec)
        self.sampler = (
            SamplerThread(self.gpu, interval=0.25, stall_after_s=math.inf) if self.gpu is not None else None
        )
        self.pipeline = Pipeline(
            self.run_dir,
            self.spec.framework or "unknown",
            self.bus,
            {**self.plan, "spec": self.plan.get("spec") or self.spec.to_dict()},
            local_resources=False,
        )
        self.step_reasons: dict[int, str] = {}
        cursor = read_json(self.run_dir / SLURM_DIR / CURSOR, {}) or {}
        self.feed_index = int(cursor.get("index") or 0)
        self._quiet_through = int(cursor.get("line") or 0)
        self._cursor: tuple[int, int] = (self.feed_index, self._quiet_through)

    @property
    def job_id(self) -> str:
        job_id = read_state(self.run_dir).get("slurm_job_id")
        if not job_id:
            raise scheduler.SlurmError(f"{self.run_dir.name}: state.json holds no slurm_job_id")
        return str(job_id)

    # ---- the steps' logs, through the local pipeline ------------------------------------
    def _step_files(self, i: int) -> tuple[Path, Path]:
        stem = step_file_stem(i + 1, self.steps[i]["name"])
        return self.run_dir / "logs" / f"{stem}.log", self.run_dir / "logs" / f"{stem}.exit"

    def _scan(self) -> list[tuple[str, int | None, float | None]]:
        """Per step, from the files the batch script writes: (status, exit_code, started)."""
        out: list[tuple[str, int | None, float | None]] = []
        for i in range(len(self.steps)):
            log, exit_file = self._step_files(i)
            code = read_exit(exit_file)
            started = None
            with contextlib.suppress(OSError):
                started = log.stat().st_mtime if code is not None else log.stat().st_ctime
            if code is not None:
                out.append(("passed" if code == 0 else "failed", code, started))
            elif log.exists():
                out.append(("running", None, started))
            else:
                out.append(("pending", None, None))
        return out

    def feed(self, job_over: bool = False) -> None:
        """Feed new log lines of the running step; close each step whose exit file appeared (and,
        once the job is over, a step that will never write one); save how far that got."""
        self._feed(job_over)
        self._save_cursor()
        self._publish_samples()

    def _feed(self, job_over: bool) -> None:
        while self.feed_index < len(self.steps):
            log, exit_file = self._step_files(self.feed_index)
            name = self.steps[self.feed_index]["name"]
            if self.pipeline.step is None:
                if not log.exists():
                    return
                with contextlib.suppress(Exception):
                    self.pipeline.start_step(name, log, quiet_through=self._quiet_through)
                self._quiet_through = 0
                if self.pipeline.step is None:
                    return
            with contextlib.suppress(Exception):
                self.pipeline.tick()
            code = read_exit(exit_file)
            if code is None and not job_over:
                return
            result = None
            with contextlib.suppress(Exception):
                result = self.pipeline.end_step(code)
            if code not in (0, None) and (reason := step_reason(result)):
                self.step_reasons[self.feed_index] = reason
            self.feed_index += 1

    def _save_cursor(self) -> None:
        line = self.pipeline.step.tailer.lineno if self.pipeline.step and self.pipeline.step.tailer else 0
        cursor = (self.feed_index, line)
        if cursor != self._cursor:
            self._cursor = cursor
            with contextlib.suppress(OSError):
                write_json_atomic(self.run_dir / SLURM_DIR / CURSOR, {"index": cursor[0], "line": cursor[1]})

    # ---- the job -------------------------------------------------------------------------
    def _scan_job_output(self, job_id: str) -> None:
        """New lines of the job's own output: ray.sub phase markers and slurmstepd's verdict line."""
        path = self.run_dir / "logs" / f"slurm-{job_id}.out"
        try:
            with open(path, "rb") as fh:
                fh.seek(self.out_offset)
                chunk = fh.read(1 << 20)
        except OSError:
            return
        end = chunk.rfind(b"\n")
        if end < 0:
            return
        self.out_offset += end + 1
        for raw in chunk[: end + 1].decode("utf-8", "replace").splitlines():
            if "[NRL_PHASE]" in raw:
                self._say("phase", None, name=raw.split("]", 3)[-1].strip(), source="ray.sub")
            elif "slurmstepd" in raw and "***" in raw:
                self.scheduler_message = raw.split("***")[1].strip() if raw.count("***") >= 2 else raw.strip()

    def _update_steps(self) -> None:
        scanned = self._scan()
        changed = [
            i for i, (new, old) in enumerate(zip(scanned, self.scanned, strict=True)) if new[0] != old[0]
        ]
        self.scanned = scanned
        if not changed:
            return

        def change(s: State) -> None:
            for i in changed:
                status, code, started = scanned[i]
                st = s["steps"][i]
                st.update({"status": status, "exit_code": code})
                if started and not st.get("started"):
                    st["started"] = started
                if status in ("passed", "failed"):
                    st["ended"] = st.get("ended") or time.time()
                if status == "failed" and self.step_reasons.get(i):
                    st["reason"] = self.step_reasons[i]
                if status == "running":
                    s["current_step"] = i

        update_state(self.run_dir, change)
        for i in changed:
            status, code, _ = scanned[i]
            reason = self.step_reasons.get(i) if status == "failed" else None
            self._say("step_state", self.steps[i]["name"], status=status, exit_code=code, reason=reason)

    def _say(self, type_: str, step: str | None, **data: Any) -> None:
        self.bus.publish(Event(type_, step, data))

    def _set_job(self, status: JobRecord) -> None:
        if (status.state, status.reason) == self.last_job:
            return
        self.last_job = (status.state, status.reason)
        phase = status.phase
        job_id = self.job_id
        # the logs the job writes on the shared filesystem, relative to the run folder
        job_logs = [f"logs/slurm-{job_id}.out"] + (
            [f"{job_id}-logs/ray-driver.log"] if self.mode == "ray.sub" else []
        )

        def change(s: State) -> None:
            s.update(
                {
                    "slurm_state": status.state,
                    "slurm_reason": status.reason,
                    "slurm_nodes": status.nodes,
                    "slurm_logs": job_logs,
                }
            )
            if phase == "active" and s.get("status") == "pending":
                s["status"] = "running"
                s["started"] = s.get("started") or time.time()

        update_state(self.run_dir, change)
        text = f"slurm {status.state}" + (f" ({status.reason})" if status.reason else "")
        self._say(
            "phase",
            None,
            name=text,
            slurm_state=status.state,
            reason=status.reason,
            nodes=status.nodes,
            source="slurm",
        )

    # ---- the end -------------------------------------------------------------------------
    def job_decision(self, status: JobRecord) -> tuple[str | None, str | None, str | None]:
        """What the job state alone says: (verdict or None when the steps decide, reason, class)."""
        m = states.meaning(status.state)
        reason = self.scheduler_message or status.reason
        asked = read_state(self.run_dir).get("cancel_requested")
        if status.state == "UNKNOWN":
            # forgotten by the scheduler and no accounting: the exit files are the evidence,
            # unless rl-console asked for the cancel (a loaded controller may forget the job
            # before the follower ever saw it CANCELLED)
            if asked:
                return "Cancelled", "cancelled from rl-console", None
            if all(s[0] in ("passed", "failed") for s in self.scanned):
                return None, None, None
            return "Blocked", status.reason, "node_failure"
        if m.verdict == "steps":
            return None, None, None
        if m.verdict == "Fail" and all(s[0] == "pending" for s in self.scanned):
            early = states.failed_before_any_step()
            return str(early.verdict), early.advice, early.klass
        if asked and (m.verdict == "Cancelled" or status.state == "FAILED"):
            return "Cancelled", "cancelled from rl-console", None
        if m.verdict == "Cancelled":
            return "Cancelled", "; ".join(x for x in (f"job {status.state}", reason) if x), None
        if status.state == "FAILED":
            return None, None, None  # the batch script exited with its failed step's code
        text = "; ".join(x for x in (f"job {status.state}", reason, m.advice) if x)
        return str(m.verdict or "Fail"), text, m.klass

    def _mark_steps(self, verdict: str | None, reason: str | None, status: JobRecord) -> list[Event]:
        """Settle the steps the job left unfinished (running -> cancelled/failed, pending -> skipped)."""
        ended = time.time()
        events: list[Event] = []

        def said(i: int, st: StepState) -> None:
            data = {"status": st["status"], "exit_code": st.get("exit_code"), "reason": st["reason"]}
            events.append(Event("step_state", self.steps[i]["name"], data))

        def change(s: State) -> None:
            if verdict == "Blocked" and status.phase == "done":
                # the node died under the last started step: its exit code is not evidence (srun
                # even exits 0 after "srun: error: Node failure on <node>")
                started = [i for i, st in enumerate(s["steps"]) if st.get("status") in ("passed", "failed")]
                if started and not any(st.get("status") == "running" for st in s["steps"]):
                    s["steps"][started[-1]]["status"] = "running"
            last_started = max(
                (i for i, st in enumerate(s["steps"]) if st.get("status") != "pending"), default=-1
            )
            for i, st in enumerate(s["steps"]):
                if st.get("status") == "running":
                    st["status"] = "cancelled" if verdict in ("Cancelled", "Blocked") else "failed"
                    st["reason"] = reason or f"job {status.state}"
                    st["ended"] = ended
                    said(i, st)
                elif (
                    verdict == "Cancelled"
                    and st.get("status") == "failed"
                    and (st.get("exit_code") in (130, 137, 143) or i == last_started)
                ):
                    # killed by the cancel, or its srun was refused mid-launch by the cancel
                    st["status"] = "cancelled"
                    st["reason"] = reason or "cancelled"
                    said(i, st)
                elif st.get("status") == "pending":
                    st["status"] = "cancelled" if verdict == "Cancelled" else "skipped"
                    st["reason"] = f"not run: job {status.state}"
                    said(i, {**st, "exit_code": None})

        update_state(self.run_dir, change)
        return events

    def _launch_failure(self, state: State) -> dict[str, Any] | None:
        """A failed step whose log shows srun could not launch it: the node_failure primary."""
        lf = states.launch_failure()
        for i, st in enumerate(state.get("steps") or []):
            if (
                st.get("status") not in ("failed", "cancelled")
                or i >= len(self.steps)
                or self.steps[i].get("on_failure") == "continue"
            ):
                continue
            log, _ = self._step_files(i)
            for path in (log.with_name(log.name[: -len(".log")] + SRUN_LOG_SUFFIX), log):
                try:
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        hit = lf.first_match(fh)
                except OSError:
                    continue
                if hit is None:
                    continue
                code = st.get("exit_code")
                return primary_finding(
                    lf.class_id,
                    "Blocked",
                    hit[1] + (f" (srun exit code {code})" if code in lf.exit_codes else ""),
                    "slurm:launch_failure",
                    states.scheduler_class(lf.class_id) or {},
                    line=hit[0],
                    step=self.steps[i]["name"],
                    file=str(path.relative_to(self.run_dir)),
                )
        return None

    def _scheduler_primary(self, class_id: str | None, text: str | None, verdict: str) -> dict[str, Any]:
        """The primary finding when the job state decided: its class from slurm.toml (or, for a
        class the logs also know, the triage catalog's title and advice)."""
        info = states.scheduler_class(class_id or "") or {}
        if not info and class_id:
            with contextlib.suppress(Exception):
                from console.triage.rules import default_catalog

                c = default_catalog().classes[class_id]
                info = {"title": c.title, "advice": c.advice}
        return primary_finding(class_id or "unknown_error", verdict, text or "", "slurm:job_state", info)

    def _finish(
        self, verdict: str | None, reason: str | None, status: JobRecord, class_id: str | None = None
    ) -> State:
        """The run's end: settle the steps, decide the verdict as a local run would, let the job
        state add what only it knows, write triage.json and the final state."""
        job_decided = verdict is not None
        self.feed(job_over=True)
        events = self._mark_steps(verdict, reason, status)
        for ev in events:
            self.bus.publish(ev)
        triage: dict[str, Any] | None = None
        if verdict != "Cancelled":
            final, triage = run_outcome(self.run_dir, self.steps, self.pipeline.step_results)
            triage = (
                dict(triage)
                if triage
                else {
                    "verdict": final,
                    "framework": self.spec.framework,
                    "primary": None,
                    "findings": [],
                    "progress": {},
                }
            )
            launch = self._launch_failure(read_state(self.run_dir)) if final != "Pass" or verdict else None
            weak = (None, "unknown_error", "hang")  # what a killed step's log says when it says nothing
            if launch is not None and (triage.get("primary") or {}).get("class") in weak:
                triage["primary"], final = launch, "Blocked"
            if verdict == "Blocked":
                final = "Blocked"
                if (triage.get("primary") or {}).get("rule") != "slurm:launch_failure":
                    triage["primary"] = self._scheduler_primary(class_id, reason, "Blocked")
            elif verdict == "Fail" and final != "Blocked":
                final = "Fail"
                if (triage.get("primary") or {}).get("class") in (None, "unknown_error"):
                    triage["primary"] = self._scheduler_primary(class_id, reason, "Fail")
            triage["verdict"] = final
            triage["slurm"] = {
                "job_id": self.job_id,
                "state": status.state,
                "reason": reason or status.reason,
                "exit_code": status.exit_code,
                "nodes": status.nodes,
            }
            if final == "Blocked" and triage.get("primary"):
                reason = reason or f"{triage['primary'].get('class')}: {triage['primary'].get('evidence')}"
            verdict = final
        assert verdict is not None
        final_status = STATUS_BY_VERDICT.get(verdict, "failed")
        try:  # as the local supervisor does: triage.json and the report, then state.json
            record_verdict(self.run_dir, verdict, triage=triage, reason=reason if job_decided else None)
        except OSError as exc:
            print(f"rl-console follow: cannot record the verdict: {exc}", file=sys.stderr, flush=True)

        def change(s: State) -> None:
            s.update(
                {
                    "status": final_status,
                    "verdict": verdict,
                    "ended": time.time(),
                    "slurm_state": status.state,
                    "slurm_reason": reason or status.reason,
                    "slurm_exit_code": status.exit_code,
                }
            )

        state = update_state(self.run_dir, change)
        self._say(
            "run_state", None, status=final_status, verdict=verdict, slurm_state=status.state, reason=reason
        )
        return state

    def sample_nodes(self, job_id: str, status: JobRecord) -> None:
        """Point the node sampler (its own thread) at the job while it runs; publish what it found."""
        if self.gpu is None:
            return
        if status.phase == "active":
            self.gpu.aim(job_id, max(1, len(status.nodes) or self.spec.slurm.nodes), status.nodes)
        else:
            self.gpu.aim(None)
        self._publish_samples()

    def _publish_samples(self) -> None:
        if self.sampler is None:
            return
        for ev in self.sampler.drain():
            ev.step = self.pipeline.step.name if self.pipeline.step else None
            self.bus.publish(ev)

    def step(self) -> State | None:
        """One poll. Returns the final state when the job has ended, else None."""
        job_id = self.job_id
        status = poll(job_id)
        self._scan_job_output(job_id)
        self.feed()
        self._update_steps()
        self._set_job(status)
        self.sample_nodes(job_id, status)
        if status.state == "PENDING" and states.never_runs(status.reason):
            self.never_since = self.never_since or time.time()
            if time.time() - self.never_since >= states.pending_grace_s():
                with contextlib.suppress(scheduler.SlurmError):
                    scheduler.scancel(job_id)
                return self._finish(
                    "Blocked", states.pending_advice(str(status.reason)), status, "scheduler_stop"
                )
        else:
            self.never_since = None
        if status.phase == "done" or status.state == "UNKNOWN":
            time.sleep(0.2)  # the last exit file may land just after the state changes
            self._scan_job_output(job_id)
            self.feed()
            self._update_steps()
            verdict, reason, class_id = self.job_decision(status)
            return self._finish(verdict, reason, status, class_id)
        return None

    def run(self, max_s: float | None = None, lock: LockFile | None = None) -> State:
        deadline = None if max_s is None else time.monotonic() + max_s
        failing_since: float | None = None
        try:
            while True:
                state = read_state(self.run_dir)  # FileNotFoundError: the run folder is gone
                if is_finished(state):
                    return state
                if lock is not None:
                    lock.refresh()
                try:
                    final = self.step()
                    failing_since = None
                except scheduler.SlurmError as exc:
                    # slurmctld may be restarting: keep trying for a while, then leave the run as it
                    # is (running); a later attach starts a new follower
                    print(f"rl-console follow: {exc}", file=sys.stderr, flush=True)
                    failing_since = failing_since or time.monotonic()
                    if time.monotonic() - failing_since > GIVE_UP_S:
                        print(
                            f"rl-console follow: Slurm unreachable for {GIVE_UP_S:.0f}s; giving up "
                            "(rl-console attach restarts the follower)",
                            file=sys.stderr,
                            flush=True,
                        )
                        return read_state(self.run_dir)
                    final = None
                if final is not None:
                    return final
                if deadline is not None and time.monotonic() > deadline:
                    return read_state(self.run_dir)
                # between Slurm polls, keep the running step's log flowing through the pipeline
                next_poll = time.monotonic() + self.poll_s
                while time.monotonic() < next_poll:
                    time.sleep(min(self.tick_s, max(0.0, next_poll - time.monotonic())))
                    self.feed()
        finally:
            if self.sampler is not None:
                self.sampler.stop(5.0)
            with contextlib.suppress(Exception):
                self.pipeline.close()
            self.bus.close()


def follow(run_dir: Path, poll_s: float = 2.0, max_s: float | None = None) -> State:
    """Update the run's state.json and events.jsonl until its job ends; return the final state. One
    follower per run (``slurm/follow.lock``: flock, or an O_EXCL file with owner and expiry where the
    filesystem has no flock); a second one waits for the first and returns the state it left."""
    run_dir = Path(run_dir).resolve()
    lock_path = run_dir / SLURM_DIR / FOLLOW_LOCK
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = LockFile(lock_path, expiry_s=max(FOLLOW_LOCK_EXPIRY_S, 10 * poll_s), poll_s=1.0)
    lock.acquire()
    try:
        return JobRecorder(run_dir, poll_s=poll_s).run(max_s=max_s, lock=lock)
    finally:
        lock.release()


def follower_running(run_dir: Path) -> bool:
    return is_locked(Path(run_dir) / SLURM_DIR / FOLLOW_LOCK)


def _is_follower(pid: int, run_dir: Path) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except OSError:
        return False
    return b"console.runs.slurm.follow" in argv and os.fsencode(str(run_dir)) in argv


def start_follower(run_dir: Path) -> int | None:
    """Start the detached follower unless one runs or the run is over (on start and on reattach, after
    the console or even the follower was killed); its pid, or None when nothing was started."""
    run_dir = Path(run_dir).resolve()
    with contextlib.suppress(FileNotFoundError):
        if is_finished(read_state(run_dir)):
            return None
    if follower_running(run_dir):
        return None
    with contextlib.suppress(FileNotFoundError):
        pid = read_state(run_dir).get("follower_pid")
        if pid and _is_follower(int(pid), run_dir):
            return None  # started a moment ago, not holding its lock yet
    (run_dir / SLURM_DIR).mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = spawn_detached("console.runs.slurm.follow", run_dir, run_dir / SLURM_DIR / FOLLOW_LOG, env)
    update_state(run_dir, lambda s: s.update({"follower_pid": proc.pid}))
    return proc.pid
