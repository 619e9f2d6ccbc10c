"""A run's numbers for a comparison: metric curves, GPU peaks, hardware, read from its run folder.

Curves come from the run's ``metrics.json`` (NeMo-RL schema, the authority once written), else from
a train step's ``metrics_json`` outside the folder when it was not rewritten after the run ended,
plus the ``metrics`` events the log parsers wrote to ``events.jsonl`` for tags it does not hold
(replays, verl console lines, a run still going). GPU peaks and device names come from the ``gpu``
samples in ``events.jsonl``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console.fileio import read_json

STALE_AFTER_END_S = 300.0  # an outside metrics.json written later than this belongs to another run


@dataclass
class GpuPeak:
    index: str
    name: str
    peak_bytes: float


@dataclass
class RunSeries:
    curves: dict[str, dict[int, float]] = field(default_factory=dict)
    gpu: dict[str, GpuPeak] = field(default_factory=dict)
    source: str = "none"  # where the curves came from, for the report

    @property
    def tags(self) -> set[str]:
        return set(self.curves)


def _number(value: Any) -> float | None:
    if isinstance(value, int | float | str):  # bool too: it is an int
        try:
            return float(value)  # "nan" / "inf" as the parsers write them
        except ValueError:
            return None
    return None


def _points(series: dict[str, Any]) -> dict[int, float]:
    points: dict[int, float] = {}
    for step, value in series.items():
        v = _number(value)
        try:
            s = int(step)
        except (TypeError, ValueError):
            continue
        if v is not None:
            points[s] = v
    return points


class _JsonCurves(dict[str, dict[Any, Any]]):
    """``{tag: {step: value}}`` over a metrics.json dict, converting a tag only when it is asked for
    (a comparison reads a dozen of its hundreds of tags)."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__((str(t), v) for t, v in data.items() if isinstance(v, dict) and v)
        self._done: set[str] = set()

    def __getitem__(self, tag: str) -> dict[int, float]:
        value = super().__getitem__(tag)
        if tag not in self._done:
            value = _points(value)
            self[tag] = value
            self._done.add(tag)
        return value


def _outside_metrics_json(run_dir: Path, state: Mapping[str, Any]) -> tuple[Any, str] | None:
    """A train step's metrics_json outside the run folder, unless rewritten after the run ended."""
    plan = read_json(run_dir / "plan.json", {}) or {}
    ended = state.get("ended")
    for step in plan.get("steps") or []:
        rel = step.get("metrics_json")
        if not rel or step.get("kind") not in ("train", "metrics"):
            continue
        path = Path(rel) if Path(rel).is_absolute() else Path(step.get("cwd") or run_dir) / rel
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if isinstance(ended, int | float) and mtime > ended + STALE_AFTER_END_S:
            continue
        data = read_json(path)
        if isinstance(data, dict) and data:
            return data, str(path)
    return None


def load_series(run_dir: Path) -> RunSeries:
    run_dir = Path(run_dir)
    out = RunSeries()
    state = read_json(run_dir / "state.json", {}) or {}
    data = read_json(run_dir / "metrics.json")
    if isinstance(data, dict) and data:
        out.curves, out.source = _JsonCurves(data), "metrics.json"
    else:
        found = _outside_metrics_json(run_dir, state)
        if found is not None:
            out.curves, out.source = _JsonCurves(found[0]), found[1]
    from_json = set(out.curves)
    shorts = {t.rsplit("/", 1)[-1] for t in from_json if "/" in t}
    parsed: dict[str, dict[int, float]] = {}
    for kind, obj in _wanted_events(run_dir / "events.jsonl"):
        if kind == "metrics":
            step = obj.get("step")
            if not isinstance(step, int) or isinstance(step, bool):
                continue
            for name, value in (obj.get("values") or {}).items():
                v = _number(value)
                if v is not None and name not in from_json and name not in shorts:
                    parsed.setdefault(str(name), {})[step] = v
        elif kind == "gpu":
            for dev in obj.get("devices") or []:
                _note_gpu(out, dev)
    if parsed:
        out.curves.update(parsed)
        out.source = out.source + " + log" if out.source != "none" else "log"
    if not out.gpu:  # no samples of our own (NVML absent, Slurm): NeMo-RL's GPU monitor, when it ran
        _gpu_from_ray_metrics(out)
    return out


_RAY_GPU_MEM = re.compile(r"^ray/node\.(\d+)\.gpu\.(\d+)\.mem_gb$")


def _gpu_from_ray_metrics(out: RunSeries) -> None:
    """Peaks from ``ray/node.N.gpu.M.mem_gb`` (GiB; NeMo-RL's ``logger.monitor_gpus``) in metrics.json."""
    for tag in list(out.curves):
        m = _RAY_GPU_MEM.match(tag)
        if not m:
            continue
        values = [v for v in out.curves[tag].values() if not math.isnan(v)]
        if values:
            index = f"node{m.group(1)}.{m.group(2)}"
            out.gpu[index] = GpuPeak(index, "(ray metrics)", max(values) * 1024**3)


_KINDS = {b'"metrics"': "metrics", b'"gpu"': "gpu"}


def _wanted_events(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """The metrics and gpu events of ``events.jsonl``, streamed: a line that does not even
    hold one of those words (progress, phase, finding, ...) is never parsed."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below; a missing file is no events
    except OSError:
        return
    with fh:
        for raw in fh:
            kind = next((k for needle, k in _KINDS.items() if needle in raw), None)
            if kind is None or not raw.endswith(b"\n"):
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict) and obj.get("type") == kind:
                yield kind, obj


def _note_gpu(out: RunSeries, dev: dict[str, Any]) -> None:
    index = str(dev.get("index", "?"))
    used = _number(dev.get("mem_used"))
    if used is None or math.isnan(used):
        return
    peak = out.gpu.get(index)
    if peak is None:
        out.gpu[index] = GpuPeak(index, str(dev.get("name") or "?"), used)
    elif used > peak.peak_bytes:
        peak.peak_bytes = used
