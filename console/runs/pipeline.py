"""The supervisor's monitoring pipeline: tail each step's log, feed the progress parser and the
triage engine, sample GPUs and the host, publish everything to ``events.jsonl``. Every part is
fenced: an exception inside one disables that part (noted once in supervisor.log), never the run.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from console.events import Event, EventBus
from console.fileio import read_json
from console.monitor.eta import StallDetector
from console.monitor.gpu import GpuSampler
from console.monitor.host import HostSampler, default_disk_paths
from console.monitor.procs import run_process_tree
from console.monitor.progress import make_parser
from console.monitor.sampler import ResourceSampler
from console.monitor.tailer import Tailer
from console.rundir.model import State
from console.rundir.state import read_state
from console.runs.sampling import SamplerThread
from console.triage.engine import TriageEngine
from console.triage.fastscan import GatedFeed
from console.triage.verdict import run_verdict

SAMPLE_EVERY_S = 1.0
DEFAULT_HANG_TIMEOUT_S = 1800.0
HANG_ENV = "RL_CONSOLE_HANG_TIMEOUT"


def hang_timeout(spec: dict[str, Any]) -> float:
    """Seconds without progress before a step is reported as hung: spec, then env, then 30 min."""
    value = (spec.get("extra") or {}).get("hang_timeout_s") or os.environ.get(HANG_ENV)
    try:
        return float(value) if value else DEFAULT_HANG_TIMEOUT_S
    except ValueError:
        return DEFAULT_HANG_TIMEOUT_S


def _read_json(path: Path) -> dict[str, Any]:
    data = read_json(path, {})
    return data if isinstance(data, dict) else {}


def _reraise(exc: BaseException) -> None:
    raise exc


class _Fenced:
    """Calls a component; on the first exception logs it and turns the component off."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dead = False

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self.dead:
            return None
        try:
            return fn(*args)
        except Exception:
            self.dead = True
            print(f"rl-console supervisor: {self.name} disabled after an error:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            sys.stderr.flush()
            return None


class StepMonitor:
    """Tail + parse + triage of one step's log."""

    def __init__(
        self,
        name: str,
        log: Path,
        framework: str,
        bus: EventBus,
        hang_after_s: float = DEFAULT_HANG_TIMEOUT_S,
        progress_only: bool = True,
        quiet_through: int = 0,
    ) -> None:
        self.name = name
        self.bus = bus
        # lines up to this one were published by an earlier follower of the same log: feed them to
        # the parser and the triage engine again (their state), publish nothing for them
        self.quiet_through = quiet_through
        # training steps must show progress (banners, results); other steps just any log line
        self.progress_only = progress_only
        self.stall = StallDetector(hang_after_s)
        self.fence = {k: _Fenced(f"{k} ({name})") for k in ("tail", "parser", "triage")}
        self.tailer: Any = self.fence["tail"].call(lambda: Tailer(log, emit_partial=False))
        self.parser: Any = self.fence["parser"].call(make_parser, framework)
        self.engine: Any = self.fence["triage"].call(TriageEngine, framework)
        # lines that cannot change the engine skip it (console/triage/fastscan.py): same findings, less CPU
        self.triage = self.fence["triage"].call(GatedFeed, self.engine) if self.engine is not None else None

    def poll(self) -> int:
        if self.tailer is None:
            return 0
        lines = self.fence["tail"].call(self.tailer.poll) or []
        if lines and not self.progress_only:
            self.stall.activity()
        for line in lines:
            self._feed(line.lineno, line.text, loud=line.lineno > self.quiet_through)
        self._check_stall()
        return len(lines)

    def _feed(self, lineno: int, text: str, loud: bool) -> None:
        """One line through the parser and the triage engine; ``loud``: publish what they said."""
        if self.parser is not None:
            for ev in self.fence["parser"].call(self.parser.feed, text) or []:
                ev.step = self.name
                if loud:
                    self.bus.publish(ev)
                if ev.type in self.stall.PROGRESS_TYPES:
                    self.stall.activity()
        if self.triage is not None:
            for finding in self.fence["triage"].call(self.triage.feed, lineno, text) or []:
                data = dict(finding)
                data.setdefault("line", lineno)
                if loud:
                    self.bus.publish(Event("finding", self.name, data))

    def _check_stall(self) -> None:
        hang = self.stall.check()
        if hang is None:
            return
        hang.step = self.name
        self.bus.publish(hang)
        if self.engine is not None:
            finding = self.fence["triage"].call(self.engine.note_hang, hang.data["idle_s"])
            if finding:
                self.bus.publish(Event("finding", self.name, dict(finding)))

    def finish(self, exit_code: int | None) -> dict[str, Any] | None:
        """Drain the log and return the step's triage JSON (or None)."""
        for _ in range(1000):
            if not self.poll():
                break
        tail = self.fence["tail"].call(lambda: self.tailer.pending_text) if self.tailer else None
        if tail:  # an unterminated last line is a line too, once the step has ended
            self._feed(self.tailer.lineno + 1, tail, loud=True)
        result = self.fence["triage"].call(self.engine.result, exit_code) if self.engine is not None else None
        if self.tailer is not None:
            self.fence["tail"].call(self.tailer.close)
        return result


class Pipeline:
    """All monitoring of a run; the supervisor calls ``start_step``, ``tick`` and ``end_step``."""

    def __init__(
        self,
        run_dir: Path,
        framework: str,
        bus: EventBus,
        plan: dict[str, Any] | None = None,
        local_resources: bool = True,
    ) -> None:
        """``plan`` is ``plan.json`` (with its ``spec``) when the caller already read it.
        ``local_resources=False``: no GPU/host sampling of this machine (a Slurm follower samples the
        job's nodes itself)."""
        self.run_dir = run_dir
        self.framework = framework
        self.bus = bus
        self.step: StepMonitor | None = None
        self.step_results: dict[str, dict[str, Any]] = {}
        self._sampler_fence = _Fenced("resource sampler")
        self._sampler_fence.dead = not local_resources  # closed: this machine is not sampled at all
        self.step_pid: int | None = None
        plan = plan if plan is not None else _read_json(run_dir / "plan.json")
        self.hang_after_s = hang_timeout(plan.get("spec") or _read_json(run_dir / "spec.json"))
        self._kinds = {str(s.get("name")): str(s.get("kind") or "train") for s in plan.get("steps") or []}
        self._sampler: Any = self._sampler_fence.call(
            lambda: ResourceSampler(
                gpu=GpuSampler(run_pids_fn=self._step_pids),
                host=HostSampler(paths=default_disk_paths(run_dir)),
            )
        )
        # samples are taken on their own thread: a hung NVML/NFS call never stalls the supervisor
        self._sampling: SamplerThread | None = (
            self._sampler_fence.call(lambda: SamplerThread(self._sampler, SAMPLE_EVERY_S))
            if self._sampler is not None
            else None
        )

    def _step_pids(self) -> set[int]:
        """The current step's processes (its wrapper's descendants), to mark GPU processes as ours."""
        return run_process_tree([self.step_pid]) if self.step_pid else set()

    def start_step(self, name: str, log: Path, pid: int | None = None, quiet_through: int = 0) -> None:
        kind = self._kinds.get(name, "train")
        self.step = StepMonitor(
            name,
            log,
            self.framework,
            self.bus,
            hang_after_s=self.hang_after_s,
            progress_only=kind == "train",
            quiet_through=quiet_through,
        )
        self.step_pid = pid

    def tick(self) -> None:
        if self.step is not None:
            self.step.poll()
        if self._sampling is not None:
            self._sampling.step = self.step.name if self.step else None
            for ev in self._sampling.drain():
                self.bus.publish(ev)
            if self._sampling.dead is not None and not self._sampler_fence.dead:
                self._sampler_fence.call(_reraise, self._sampling.dead)  # noted once in supervisor.log

    def end_step(self, exit_code: int | None) -> dict[str, Any] | None:
        if self.step is None:
            return None
        result = self.step.finish(exit_code)
        if result is not None:
            self.step_results[self.step.name] = result
        self.step = None
        self.step_pid = None
        return result

    def close(self) -> None:
        if self._sampling is not None and not self._sampling.stop():
            return  # a hung call holds the sampler: leave NVML alone, the process exits anyway
        if self._sampler is not None:
            self._sampler_fence.call(self._sampler.close)


# ---- the verdict, shared by the local supervisor and the Slurm follower ----------------------------
def step_reason(result: dict[str, Any] | None) -> str | None:
    """A failed step's reason: its triage primary's class and evidence (None without one)."""
    primary = (result or {}).get("primary") or {}
    return f"{primary['class']}: {str(primary.get('evidence', ''))[:200]}" if primary.get("class") else None


def final_triage(run_dir: Path, step_results: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The run's triage JSON (``triage.json``): the verdict engine over the run folder; when that
    fails, the first failing step's own triage (else the last step's)."""
    try:
        result = run_verdict(run_dir)
        if isinstance(result, dict) and result.get("verdict"):
            return dict(result)
    except Exception:
        traceback.print_exc(file=sys.stderr)
    failed = [r for r in step_results.values() if r.get("verdict") in ("Fail", "Blocked")]
    if failed:
        return failed[0]
    return list(step_results.values())[-1] if step_results else None


def run_outcome(
    run_dir: Path, steps: list[dict[str, Any]], step_results: dict[str, dict[str, Any]]
) -> tuple[str, dict[str, Any] | None]:
    """(verdict, triage JSON) of a run whose steps have all ended: what the local supervisor
    decides, and what the Slurm follower decides before it adds what only the job state knows."""
    triage = final_triage(run_dir, step_results)
    return decide_verdict(read_state(run_dir), steps, triage), triage


def decide_verdict(state: State, steps: list[dict[str, Any]], triage: dict[str, Any] | None) -> str:
    """Triage when decisive (Fail/Blocked, or Pass with all steps passed); else the step statuses."""
    stopping_ok = all(
        s["status"] == "passed" or (plan_step.get("on_failure") == "continue" and s["status"] == "failed")
        for s, plan_step in zip(state["steps"], steps, strict=False)
    )
    tri = (triage or {}).get("verdict")
    if tri in ("Fail", "Blocked"):
        return str(tri)
    return "Pass" if stopping_ok else "Fail"
