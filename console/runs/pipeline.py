"""The supervisor's monitoring pipeline: tail each step's log, feed the progress parser and the
triage engine, sample GPUs and the host, and publish everything to ``events.jsonl``.

Every part is optional and fenced: a missing module or an exception inside a parser, the triage
engine or a sampler disables that part (noted once in supervisor.log) and never reaches the run.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from console.events import Event, EventBus

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


def _optional(spec: str) -> Any | None:
    module, _, attr = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except Exception:  # missing, or broken mid-edit: the run goes on without it
        return None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


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

    def __init__(self, name: str, log: Path, framework: str, bus: EventBus,
                 hang_after_s: float = DEFAULT_HANG_TIMEOUT_S, progress_only: bool = True) -> None:
        self.name = name
        self.bus = bus
        # training steps must show progress (banners, results); other steps just any log line
        self.progress_only = progress_only
        self.stall: Any = None
        stall_cls = _optional("console.monitor.eta:StallDetector")
        if stall_cls is not None:
            self.stall = stall_cls(hang_after_s)
        self.tailer: Any = None
        self.parser: Any = None
        self.engine: Any = None
        self.fence = {k: _Fenced(f"{k} ({name})") for k in ("tail", "parser", "triage")}
        tailer_cls = _optional("console.monitor.tailer:Tailer")
        make_parser = _optional("console.monitor.progress:make_parser")
        engine_cls = _optional("console.triage.engine:TriageEngine")
        if tailer_cls is not None:
            self.tailer = self.fence["tail"].call(lambda: tailer_cls(log, emit_partial=False))
        if make_parser is not None:
            self.parser = self.fence["parser"].call(make_parser, framework)
        if engine_cls is not None:
            self.engine = self.fence["triage"].call(engine_cls, framework)

    def poll(self) -> int:
        if self.tailer is None:
            return 0
        lines = self.fence["tail"].call(self.tailer.poll) or []
        if lines and self.stall is not None and not self.progress_only:
            self.stall.activity()
        for line in lines:
            if self.parser is not None:
                for ev in self.fence["parser"].call(self.parser.feed, line.text) or []:
                    ev.step = self.name
                    self.bus.publish(ev)
                    if self.stall is not None and ev.type in self.stall.PROGRESS_TYPES:
                        self.stall.activity()
            if self.engine is not None:
                for finding in self.fence["triage"].call(self.engine.feed, line.lineno, line.text) or []:
                    data = dict(finding)
                    data.setdefault("line", line.lineno)
                    self.bus.publish(Event("finding", self.name, data))
        self._check_stall()
        return len(lines)

    def _check_stall(self) -> None:
        if self.stall is None:
            return
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
            lineno = self.tailer.lineno + 1
            if self.parser is not None:
                for ev in self.fence["parser"].call(self.parser.feed, tail) or []:
                    ev.step = self.name
                    self.bus.publish(ev)
            if self.engine is not None:
                for finding in self.fence["triage"].call(self.engine.feed, lineno, tail) or []:
                    self.bus.publish(Event("finding", self.name, {"line": lineno, **dict(finding)}))
        result = None
        if self.engine is not None:
            result = self.fence["triage"].call(self.engine.result, exit_code)
        if self.tailer is not None:
            self.fence["tail"].call(self.tailer.close)
        return result


class Pipeline:
    """All monitoring of a run; the supervisor calls ``start_step``, ``tick`` and ``end_step``."""

    def __init__(self, run_dir: Path, framework: str, bus: EventBus) -> None:
        self.run_dir = run_dir
        self.framework = framework
        self.bus = bus
        self.step: StepMonitor | None = None
        self.step_results: dict[str, dict[str, Any]] = {}
        self._last_sample = 0.0
        self._sampler: Any = None
        self._sampler_fence = _Fenced("resource sampler")
        self.step_pid: int | None = None
        spec = _read_json(run_dir / "spec.json")
        plan = _read_json(run_dir / "plan.json")
        self.hang_after_s = hang_timeout(spec)
        self._kinds = {str(s.get("name")): str(s.get("kind") or "train") for s in plan.get("steps") or []}
        sampler_cls = _optional("console.monitor.sampler:ResourceSampler")
        gpu_cls = _optional("console.monitor.gpu:GpuSampler")
        host_cls = _optional("console.monitor.host:HostSampler")
        disks = _optional("console.monitor.host:default_disk_paths")
        if sampler_cls and gpu_cls and host_cls and disks:
            self._sampler = self._sampler_fence.call(lambda: sampler_cls(
                bus, gpu=gpu_cls(run_pids_fn=self._step_pids), host=host_cls(paths=disks(run_dir))))

    def _step_pids(self) -> set[int]:
        """The current step's processes (its wrapper's descendants), to mark GPU processes as ours."""
        if not self.step_pid:
            return set()
        try:
            import psutil

            root = psutil.Process(self.step_pid)
            return {root.pid} | {p.pid for p in root.children(recursive=True)}
        except Exception:
            return set()

    def start_step(self, name: str, log: Path, pid: int | None = None) -> None:
        kind = self._kinds.get(name, "train")
        self.step = StepMonitor(name, log, self.framework, self.bus, hang_after_s=self.hang_after_s,
                                progress_only=kind == "train")
        self.step_pid = pid

    def tick(self) -> None:
        if self.step is not None:
            self.step.poll()
        now = time.time()
        if self._sampler is not None and now - self._last_sample >= SAMPLE_EVERY_S:
            self._last_sample = now
            self._sampler.step = self.step.name if self.step else None
            for ev in self._sampler_fence.call(self._sampler.sample_once) or []:
                self.bus.publish(ev)

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
        if self._sampler is not None:
            self._sampler_fence.call(self._sampler.gpu.close)
