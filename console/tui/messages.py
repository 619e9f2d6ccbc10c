"""Messages that workers post to the app (workers never touch widgets directly).

What a worker posts is built fresh and never changed afterwards (tuples, read-only mappings, frozen
dataclasses): the handler on the UI thread reads it while the worker goes on.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from textual.message import Message

from console.tui.rundata import RunRow, RunSnapshot


@dataclass
class RunsListed(Message):
    """The run store was scanned (replaceable: only the newest listing matters)."""

    rows: tuple[RunRow, ...]

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunsListed)


@dataclass
class LogLines(Message):
    """Lines appended to the followed log. The worker holds back further lines until the handler
    sets ``taken``, so a slow screen gets fewer, bigger batches instead of a growing queue."""

    gen: int  # which follower (the screen shows only the newest one's lines)
    lines: tuple[str, ...]
    taken: threading.Event


@dataclass
class RunUpdated(Message):
    """A fresh snapshot of the monitored run (replaceable)."""

    snapshot: RunSnapshot

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunUpdated)


@dataclass
class HostSampled(Message):
    """Live host/GPU samples taken by the console itself when the run has none."""

    host: Mapping[str, Any]
    gpu: tuple[dict[str, Any], ...]
    gpu_reason: str  # why there are no GPU samples ("" when there are)

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, HostSampled)


@dataclass
class TaskDone(Message):
    """A one-shot background task (plan, doctor, triage, report, launch) finished."""

    kind: str
    result: Any = None
    error: str | None = None


@dataclass
class RunCancelled(Message):
    """The app's cancel worker is done: ``output`` is the last line ``rl-console cancel`` printed."""

    run_id: str
    output: str
    ok: bool


@dataclass
class RunsWatched(Message):
    """The app's look at the run store: its handler (on the UI thread) finds what changed state."""

    rows: tuple[RunRow, ...]
