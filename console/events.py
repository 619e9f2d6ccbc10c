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
        if "plan_step" in obj:
            plan_step = obj.pop("plan_step")
            return cls(type=obj.pop("type", "?"), step=plan_step, t=obj.pop("t", 0.0), data=obj)
        return cls(type=obj.pop("type", "?"), step=obj.pop("step", None), t=obj.pop("t", 0.0), data=obj)


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


def read_events(path: Path, offset: int = 0) -> tuple[list[Event], int]:
    """Read complete event lines from ``offset``; return events and the new offset.

    A trailing partial line (writer mid-append) is left for the next call.
    """
    events: list[Event] = []
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            chunk = fh.read()
    except FileNotFoundError:
        return events, offset
    end = chunk.rfind(b"\n")
    if end < 0:
        return events, offset
    for raw in chunk[: end + 1].splitlines():
        try:
            events.append(Event.from_dict(json.loads(raw)))
        except (ValueError, TypeError):
            continue
    return events, offset + end + 1


def iter_events(path: Path) -> Iterator[Event]:
    events, _ = read_events(path)
    yield from events
