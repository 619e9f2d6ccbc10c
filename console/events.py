"""Typed events: what the monitor, triage and supervisor say about a run.

Every event is one JSON object per line in the run's ``events.jsonl``:
``{"t": <unix time>, "type": "<kind>", "step": "<plan step name or null>", ...payload}``.
When the payload has its own ``step`` (progress, metrics: the iteration number), the payload's
value is written as ``step`` and the plan step name as ``plan_step``; ``from_dict`` undoes this.

Kinds and their payload keys (all optional unless noted):
- ``progress``: step (int, required), total (int|None), eta_s (float|None), step_time_s,
  resumed_from (int|None), source ("nemo-rl"|"verl"|"demo")
- ``metrics``: step (int), values ({name: float})  -- per-step results parsed from the log
- ``phase``: name (str)  -- e.g. "Preparing batch" from NeMo-RL's ``▶ ...`` lines
- ``complete``: reason (str)  -- training reported completion ("Max number of steps...")
- ``finding``: class (str), verdict ("Fail"|"Blocked"|"Noise"), line (int), evidence (str)
- ``gpu``: devices ([{index, name, uuid, mem_used, mem_total, util, procs: [{pid, mem, ours}]}])
- ``host``: cpu (percent), mem_used, mem_total, disks ({path: free_bytes})
- ``step_state``: status ("pending"|"running"|"passed"|"failed"|"skipped"|"cancelled"),
  exit_code (int|None), reason (str|None)
- ``run_state``: status, verdict
- ``hang``: idle_s (float)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Event:
    type: str
    step: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    t: float = field(default_factory=time.time)

    def to_json(self) -> str:
        obj: dict[str, Any] = {"t": round(self.t, 3), "type": self.type, "step": self.step}
        if "step" in self.data:
            obj["plan_step"] = self.step
        obj.update(self.data)
        return json.dumps(obj, separators=(",", ":"), default=str)

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> Event:
        obj = dict(obj)
        step = obj.pop("plan_step") if "plan_step" in obj else obj.pop("step", None)
        return cls(type=obj.pop("type", "?"), step=step, t=obj.pop("t", 0.0), data=obj)


Subscriber = Callable[[Event], None]


class EventBus:
    """Fan-out of events to subscribers, optionally appending each to an events.jsonl file."""

    def __init__(self, path: Path | None = None) -> None:
        self._subs: list[Subscriber] = []
        self._fh = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115

    def subscribe(self, fn: Subscriber) -> None:
        self._subs.append(fn)

    def publish(self, event: Event) -> None:
        if self._fh is not None:
            self._fh.write(event.to_json() + "\n")
            self._fh.flush()
        for fn in list(self._subs):
            fn(event)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def compact_if_large(self, at_bytes: int = 0) -> bool:
        """Compact the event file (``compact_events``) once it is larger than ``at_bytes``
        (default ``COMPACT_AT_BYTES``), then append to the new file. True when it compacted."""
        if self._fh is None:
            return False
        path = Path(self._fh.name)
        try:
            if path.stat().st_size <= (at_bytes or COMPACT_AT_BYTES):
                return False
        except OSError:
            return False
        self._fh.flush()
        try:
            compact_events(path)
            return True
        except OSError:
            return False
        finally:
            self._fh.close()
            self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115


def read_events(path: Path, offset: int = 0) -> tuple[list[Event], int]:
    """Read complete event lines from ``offset``; return events and the new offset.

    A trailing partial line (writer mid-append) is left for the next call.
    """
    events: list[Event] = []
    try:
        lines = _complete_lines(path, offset)
    except FileNotFoundError:
        return events, offset
    for raw in lines:
        try:
            events.append(Event.from_dict(json.loads(raw)))
        except (ValueError, TypeError):
            continue
    return events, offset + sum(len(x) for x in lines)


def _complete_lines(path: Path, offset: int) -> list[bytes]:
    """The complete lines (newline kept) of ``path`` from ``offset``: a partial last one is left."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        chunk = fh.read()
    return chunk[: chunk.rfind(b"\n") + 1].splitlines(keepends=True)


def iter_events(path: Path) -> Iterator[Event]:
    events, _ = read_events(path)
    yield from events


# ------------------------------------------------------------------ compaction and incremental reads
RESOURCE_TYPES = ("gpu", "host")
KEEP_FULL_S = 600.0  # resource samples younger than this keep their full rate
DOWNSAMPLE_EVERY_S = 60.0  # older ones: one per type per this many seconds
COMPACT_AT_BYTES = 16 << 20


def compact_events(
    path: Path,
    now: float | None = None,
    keep_full_s: float = KEEP_FULL_S,
    every_s: float = DOWNSAMPLE_EVERY_S,
) -> tuple[int, int]:
    """Downsample ``gpu``/``host`` samples older than ``keep_full_s`` to one per ``every_s`` per type;
    every other event is kept verbatim and in order. The file is replaced atomically (a reader with
    an ``EventCursor`` goes on without loss or repeat). Returns (old size, new size)."""
    import os
    import tempfile

    now = time.time() if now is None else now
    with open(path, "rb") as fh:
        raw = fh.read()
    end = raw.rfind(b"\n") + 1  # a partial last line (mid-append) is kept as is
    kept: list[bytes] = []
    last_kept: dict[str, float] = {}
    for line in raw[:end].splitlines(keepends=True):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        kind, t = obj.get("type"), float(obj.get("t") or 0.0)
        if kind in RESOURCE_TYPES and now - t > keep_full_s:
            if t - last_kept.get(kind, float("-inf")) < every_s:
                continue
            last_kept[kind] = t
        kept.append(line)
    fd, tmp = tempfile.mkstemp(dir=Path(path).parent, prefix=".events.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.writelines(kept)
            out.write(raw[end:])
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(raw), sum(len(x) for x in kept) + len(raw) - end


class EventCursor:
    """Reads an events.jsonl incrementally (new complete lines only), across compactions: when the
    file was replaced, it rereads the new one and skips what it had already returned (by time)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.offset = 0
        self.inode: int | None = None
        self.last_t = float("-inf")
        self._seen_at_last_t: set[bytes] = set()

    def read(self) -> list[Event]:
        import os

        try:
            st = os.stat(self.path)
        except OSError:
            return []
        replaced = self.inode is not None and (st.st_ino != self.inode or st.st_size < self.offset)
        if replaced:
            self.offset = 0
        self.inode = st.st_ino
        try:
            lines = _complete_lines(self.path, self.offset)
        except OSError:
            return []
        self.offset += sum(len(x) for x in lines)
        events: list[Event] = []
        for line in (x.rstrip(b"\r\n") for x in lines):
            try:
                obj = json.loads(line)
                t = float(obj.get("t") or 0.0)
            except (ValueError, TypeError, AttributeError):
                continue
            if replaced and (t < self.last_t or (t == self.last_t and line in self._seen_at_last_t)):
                continue
            if t > self.last_t:
                self.last_t, self._seen_at_last_t = t, set()
            if t == self.last_t:
                self._seen_at_last_t.add(line)
            try:
                events.append(Event.from_dict(obj))
            except (ValueError, TypeError):
                continue
        return events
