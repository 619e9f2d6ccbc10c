"""Incremental reader of the TensorBoard event files under log folders, with tensorboard's own
``EventFileLoader`` (a poll reads what was appended; a record still being written is retried).
``metrics()`` merges the files as NeMo-RL's json_dump_tb_logs.py: by mtime, a later file wins.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EVENT_GLOB = "events*tfevents*"


@dataclass(slots=True)
class ScalarPoint:
    tag: str
    step: int
    value: float
    wall_time: float
    file: str


class ConflictError(ValueError):
    pass


def _scalar_of(value: Any) -> float | None:
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return float(value.simple_value)
    if kind == "tensor":
        from tensorboard.util import tensor_util

        try:
            arr = tensor_util.make_ndarray(value.tensor)
        except Exception:  # noqa: BLE001 - strings, images...: not a scalar
            return None
        if arr.size != 1 or arr.dtype.kind not in "fiub":
            return None
        return float(arr.reshape(()).item())
    return None


def find_event_files(logdirs: list[Path]) -> list[Path]:
    """All event files under the folders (recursively), oldest modification first."""
    files: set[Path] = set()
    for d in logdirs:
        if d.is_file():
            files.add(d)
        elif d.is_dir():
            files.update(p for p in d.rglob(EVENT_GLOB) if p.is_file())

    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    return sorted(files, key=lambda p: (mtime(p), str(p)))


class TbReader:
    """Reads scalars from every event file under ``logdirs``; call ``poll()`` repeatedly."""

    def __init__(self, *logdirs: str | os.PathLike[str]) -> None:
        self.logdirs = [Path(d) for d in logdirs]
        self._loaders: dict[Path, Any] = {}
        self._data: dict[Path, dict[str, dict[int, float]]] = {}
        self._lock = threading.Lock()
        logging.getLogger("tensorboard").setLevel(logging.ERROR)

    def poll(self) -> list[ScalarPoint]:
        """New scalar points since the last call (new files are picked up too)."""
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

        out: list[ScalarPoint] = []
        with self._lock:
            for path in find_event_files(self.logdirs):
                loader = self._loaders.get(path)
                if loader is None:
                    try:
                        loader = EventFileLoader(str(path))
                    except Exception:  # noqa: BLE001 - unreadable now; retry next poll
                        continue
                    self._loaders[path] = loader
                    self._data[path] = {}
                data = self._data[path]
                try:
                    for event in loader.Load():
                        if not event.HasField("summary"):
                            continue
                        for value in event.summary.value:
                            v = _scalar_of(value)
                            if v is None:
                                continue
                            data.setdefault(value.tag, {})[int(event.step)] = v
                            out.append(ScalarPoint(value.tag, int(event.step), v, event.wall_time, str(path)))
                except Exception:  # noqa: BLE001 - corrupt tail: keep what was read
                    continue
        return out

    def metrics(self, error_on_conflicts: bool = False) -> dict[str, dict[str, float]]:
        """Merged ``{tag: {"<step>": value}}``, tags sorted, steps numerically sorted."""
        with self._lock:
            order = [p for p in find_event_files(self.logdirs) if p in self._data]
            order += [p for p in self._data if p not in order]
            merged: dict[str, dict[int, tuple[float, Path]]] = {}
            for path in order:
                for tag, steps in self._data[path].items():
                    dst = merged.setdefault(tag, {})
                    for step, v in steps.items():
                        prev = dst.get(step)
                        if error_on_conflicts and prev and prev[1] != path and not _same(prev[0], v):
                            raise ConflictError(
                                f"Conflict detected for metric '{tag}' at step {step}:\n"
                                f"  {prev[1]}: {prev[0]}\n  {path}: {v}"
                            )
                        dst[step] = (v, path)
        return {tag: {str(s): merged[tag][s][0] for s in sorted(merged[tag])} for tag in sorted(merged)}


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))
