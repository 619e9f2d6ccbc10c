"""Read-only view of run folders (the run folder contract of console/CONTRACTS.md); no Textual here."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from console.events import Event, EventCursor
from console.fileio import read_json
from console.runs.recover import read_current_state
from console.runs.store import RunStore

LIVE_STATUSES = ("pending", "running")
MAX_POINTS = 600  # per metric series kept for plots
MAX_FINDINGS = 500
_TAIL_BYTES = 64 * 1024


def _last_progress(events_path: Path) -> dict[str, Any] | None:
    """The last ``progress`` event, read from the file's tail only (bounded work per run)."""
    try:
        size = events_path.stat().st_size
        with open(events_path, "rb") as fh:
            fh.seek(max(0, size - _TAIL_BYTES))
            chunk = fh.read()
    except OSError:
        return None
    for raw in reversed(chunk.splitlines()):
        if b'"progress"' not in raw:
            continue
        try:
            obj: dict[str, Any] = json.loads(raw)
        except ValueError:
            continue
        if obj.get("type") == "progress":
            return obj
    return None


@dataclass
class RunRow:
    """One line of the Home screen."""

    id: str
    path: Path
    status: str = "?"
    verdict: str | None = None
    step_index: int = 0
    step_count: int = 0
    progress_step: int | None = None
    progress_total: int | None = None
    created: float = 0.0
    linked_from: str | None = None

    @property
    def live(self) -> bool:
        return self.status in LIVE_STATUSES

    def progress_text(self) -> str:
        """``step N/M`` of the plan, then the training iteration, e.g. ``1/2 · it 5/20``."""
        parts = []
        if self.step_count:
            parts.append(f"{min(self.step_index + 1, self.step_count)}/{self.step_count}")
        if self.progress_step is not None:
            total = f"/{self.progress_total}" if self.progress_total else ""
            parts.append(f"it {self.progress_step}{total}")
        return " · ".join(parts) or "-"


def row_from(run_dir: Path, state: Mapping[str, Any]) -> RunRow:
    """The Home screen's line for a run, from its current state (see ``RunStore.states``)."""
    last = _last_progress(run_dir / "events.jsonl") or {}
    return RunRow(
        id=str(state.get("id") or run_dir.name),
        path=run_dir,
        status=str(state.get("status") or "?"),
        verdict=state.get("verdict"),
        step_index=int(state.get("current_step") or 0),
        step_count=len(state.get("steps") or []),
        created=float(state.get("created") or 0.0),
        linked_from=state.get("linked_from"),
        progress_step=last.get("step") if isinstance(last.get("step"), int) else None,
        progress_total=last.get("total"),
    )


def load_row(run_dir: Path) -> RunRow | None:
    state = read_current_state(run_dir)
    return row_from(run_dir, state) if isinstance(state, dict) else None


def list_runs(runs_dir: Path) -> list[RunRow]:
    """Runs in the store (``RunStore``: broken folders skipped), newest created first."""
    rows = [row_from(path, state) for path, state in RunStore(runs_dir).states()]
    rows.sort(key=lambda r: (r.created, r.id), reverse=True)
    return rows


def _frozen(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only copy: the worker goes on changing its own dict, never this one."""
    return MappingProxyType(dict(data))


@dataclass(frozen=True)
class RunSnapshot:
    """What the Monitor shows at one tick, built by ``RunModel.refresh`` in a worker and never changed:
    every container is a tuple or a read-only copy, so the UI thread iterates it while the worker reads on."""

    run_dir: Path
    state: Mapping[str, Any]
    plan_steps: tuple[dict[str, Any], ...]
    progress: Mapping[str, Mapping[str, Any]]  # step name -> last progress
    phase: str | None
    complete: str | None
    metrics: Mapping[str, tuple[tuple[int, float], ...]]
    findings: tuple[dict[str, Any], ...]
    gpu: tuple[dict[str, Any], ...]
    host: Mapping[str, Any]
    gpu_nodes: Mapping[str, Mapping[str, Any]]  # per node (Slurm): last gpu event
    host_nodes: Mapping[str, Mapping[str, Any]]  # per node (Slurm): last host event
    hang_idle_s: float | None
    triage: Mapping[str, Any] | None

    @property
    def status(self) -> str:
        return str(self.state.get("status") or "?")

    @property
    def verdict(self) -> str | None:
        return self.state.get("verdict")

    @property
    def current_index(self) -> int:
        return int(self.state.get("current_step") or 0)

    def step_states(self) -> list[dict[str, Any]]:
        return list(self.state.get("steps") or [])

    def current_step_name(self) -> str | None:
        return _current_step_name(self.state)

    def log_path(self, index: int | None = None) -> Path | None:
        steps = self.step_states()
        idx = self.current_index if index is None else index
        if 0 <= idx < len(steps) and steps[idx].get("log"):
            return self.run_dir / str(steps[idx]["log"])
        return None


def _current_step_name(state: Mapping[str, Any]) -> str | None:
    steps = list(state.get("steps") or [])
    idx = int(state.get("current_step") or 0)
    return str(steps[idx].get("name")) if 0 <= idx < len(steps) else None


class RunModel:
    """Incremental reader of one run folder, owned by the one worker thread that calls ``refresh``:
    each call returns a new immutable ``RunSnapshot`` of its accumulators."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._events = EventCursor(run_dir / "events.jsonl")
        self._metrics_mtime = 0.0
        self._json_shorts: set[str] = set()
        self._triage_mtime = 0.0
        plan = read_json(run_dir / "plan.json") or {}
        self._plan_steps = tuple(plan.get("steps") or [])
        self._state: dict[str, Any] = {}
        self._progress: dict[str, Mapping[str, Any]] = {}
        self._series: dict[str, list[tuple[int, float]]] = {}
        self._findings: list[dict[str, Any]] = []
        self._gpu: tuple[dict[str, Any], ...] = ()
        self._host: Mapping[str, Any] = _frozen({})
        self._gpu_nodes: dict[str, Mapping[str, Any]] = {}
        self._host_nodes: dict[str, Mapping[str, Any]] = {}
        self._phase: str | None = None
        self._complete: str | None = None
        self._hang_idle_s: float | None = None
        self._triage: Mapping[str, Any] | None = None

    def refresh(self) -> RunSnapshot:
        state = read_current_state(self.run_dir)
        if isinstance(state, dict):
            self._state = dict(state)
        for ev in self._events.read():
            self._apply(ev)
        self._merge_metrics_json()
        self._load_triage()
        return RunSnapshot(
            run_dir=self.run_dir,
            state=MappingProxyType(self._state),  # a new dict per read: the next read replaces it
            plan_steps=self._plan_steps,
            progress=_frozen(self._progress),
            phase=self._phase,
            complete=self._complete,
            metrics=MappingProxyType({name: tuple(points) for name, points in self._series.items()}),
            findings=tuple(self._findings),
            gpu=self._gpu,
            host=self._host,
            gpu_nodes=_frozen(self._gpu_nodes),
            host_nodes=_frozen(self._host_nodes),
            hang_idle_s=self._hang_idle_s,
            triage=self._triage,
        )

    def _apply(self, ev: Event) -> None:
        data = ev.data
        # A progress/metrics payload's own "step" (the iteration number) shares the JSON key with
        # the event's plan-step name, so after parsing it sits in ``ev.step``: key by current step.
        if ev.type == "progress":
            it = ev.step if isinstance(ev.step, int) else data.get("step")
            name = ev.step if isinstance(ev.step, str) else (_current_step_name(self._state) or "?")
            self._progress[name] = _frozen({**data, "step": it})
        elif ev.type == "metrics":
            step = data.get("step", ev.step if isinstance(ev.step, int) else None)
            for name, value in (data.get("values") or {}).items():
                self._add_point(str(name), step, value)
        elif ev.type == "phase":
            self._phase = data.get("name")
        elif ev.type == "complete":
            self._complete = str(data.get("reason") or "complete")
        elif ev.type == "finding":
            if len(self._findings) < MAX_FINDINGS:
                self._findings.append({"step": ev.step, **data})
        elif ev.type == "gpu" and data.get("node"):
            self._gpu_nodes[str(data["node"])] = _frozen(data)
        elif ev.type == "host" and data.get("node"):
            self._host_nodes[str(data["node"])] = _frozen(data)
        elif ev.type == "gpu":
            self._gpu = tuple(data.get("devices") or ())
        elif ev.type == "host":
            self._host = _frozen(data)
        elif ev.type == "hang":
            self._hang_idle_s = data.get("idle_s")

    def _add_point(self, name: str, step: Any, value: Any) -> None:
        if name in self._json_shorts:
            return
        try:
            point = (int(step) if step is not None else -1, float(value))
        except (TypeError, ValueError):
            return
        series = self._series.setdefault(name, [])
        if series and series[-1][0] == point[0] and point[0] >= 0:
            series[-1] = point
        else:
            series.append(point)
        if len(series) > MAX_POINTS:
            del series[: len(series) - MAX_POINTS]

    def _merge_metrics_json(self) -> None:
        path = self.run_dir / "metrics.json"
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return
        if mtime == self._metrics_mtime:
            return
        self._metrics_mtime = mtime
        data = read_json(path)
        if not isinstance(data, dict):
            return
        for tag, series in data.items():
            if not isinstance(series, dict):
                continue
            points: list[tuple[int, float]] = []
            for step, value in series.items():
                try:
                    points.append((int(step), float(value)))
                except (TypeError, ValueError):
                    continue
            points.sort()
            if points:
                self._series[str(tag)] = points[-MAX_POINTS:]
        # metrics.json is the authority once written: drop the series parsed from the log's
        # results block that it also holds ("loss" beside "train/loss"), so no metric shows twice.
        self._json_shorts = {str(tag).rsplit("/", 1)[-1] for tag in data if "/" in str(tag)}
        for name in [n for n in self._series if "/" not in n and n in self._json_shorts]:
            del self._series[name]

    def _load_triage(self) -> None:
        path = self.run_dir / "triage.json"
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return
        if mtime != self._triage_mtime:
            self._triage_mtime = mtime
            data = read_json(path)
            self._triage = _frozen(data) if isinstance(data, dict) else None


def eta_text(progress: Mapping[str, Any] | None) -> str:
    if not progress:
        return ""
    eta = progress.get("eta_s")
    if isinstance(eta, int | float) and eta >= 0:
        minutes, seconds = divmod(int(eta), 60)
        hours, minutes = divmod(minutes, 60)
        return f"ETA {hours}:{minutes:02d}:{seconds:02d}" if hours else f"ETA {minutes}:{seconds:02d}"
    return ""


def age_text(created: float, now: float | None = None) -> str:
    if not created:
        return "-"
    delta = max(0, int((now or time.time()) - created))
    if delta < 60:
        return f"{delta}s ago"
    if delta < 3600:
        return f"{delta // 60}m ago"
    if delta < 86400:
        return f"{delta // 3600}h ago"
    return f"{delta // 86400}d ago"


def human_bytes(n: float | int | None) -> str:
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
