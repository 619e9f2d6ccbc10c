"""Messages that workers post, built fresh and never changed afterwards (tuples, read-only mappings,
frozen dataclasses): the handler on the UI thread reads one while the worker goes on."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from textual.message import Message

from console.tui.rundata import RunRow, RunSnapshot


class Replaceable(Message):
    """Only the newest message of its kind matters: a newer one replaces it in the queue."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, type(self))


@dataclass
class RunsListed(Replaceable):
    """The run store was scanned."""

    rows: tuple[RunRow, ...]


@dataclass
class LogLines(Message):
    """Lines appended to the followed log. The worker holds back further lines until the handler
    sets ``taken``, so a slow screen gets fewer, bigger batches instead of a growing queue."""

    gen: int  # which follower (the screen shows only the newest one's lines)
    lines: tuple[str, ...]
    taken: threading.Event


@dataclass
class RunUpdated(Replaceable):
    """A fresh snapshot of the monitored run."""

    snapshot: RunSnapshot


@dataclass
class HostSampled(Replaceable):
    """Live host/GPU samples taken by the console itself when the run has none."""

    host: Mapping[str, Any]
    gpu: tuple[dict[str, Any], ...]
    gpu_reason: str  # why there are no GPU samples ("" when there are)


@dataclass
class TaskDone(Message):
    """A one-shot background task (plan, doctor, triage, report, launch) finished."""

    kind: str
    result: Any = None
    error: str | None = None


def task_done(kind: str, task: Callable[[], Any]) -> TaskDone:
    """``task()``'s result, or its error as one line, for a worker to post."""
    try:
        return TaskDone(kind, task())
    except Exception as exc:  # noqa: BLE001 - one line to the user
        return TaskDone(kind, error=str(exc))


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
