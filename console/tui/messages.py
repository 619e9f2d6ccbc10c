"""Messages that workers post to the app (workers never touch widgets directly)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message

from console.tui.rundata import RunRow, RunSnapshot


@dataclass
class RunsListed(Message):
    """The run store was scanned (replaceable: only the newest listing matters)."""

    rows: list[RunRow]

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunsListed)


@dataclass
class LinesPending(Message):
    """New log lines wait in the screen's buffer; many of these collapse into one drain."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LinesPending)


@dataclass
class RunUpdated(Message):
    """A fresh snapshot of the monitored run (replaceable)."""

    snapshot: RunSnapshot

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunUpdated)


@dataclass
class HostSampled(Message):
    """Live host/GPU samples taken by the console itself when the run has none."""

    host: dict[str, Any]
    gpu: list[dict[str, Any]]

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, HostSampled)


@dataclass
class TaskDone(Message):
    """A one-shot background task (plan, doctor, triage, report, launch) finished."""

    kind: str
    result: Any = None
    error: str | None = None


@dataclass
class RunsChanged(Message):
    """Runs changed state since the last look (``console.tui.notify.Change`` items)."""

    changes: list[Any]
