"""Tell someone looking elsewhere that a run changed state: the terminal bell, a tmux
``display-message`` (inside tmux) and an OSC 9 desktop notification (tmux passes it on only with
``allow-passthrough on``), each a ``notify_<channel>`` setting, on by default. No Textual here."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from console.tui.rundata import RunRow

CHANNELS = ("bell", "tmux", "osc9")
FINAL = {"passed": "passed", "failed": "failed", "blocked": "is blocked", "cancelled": "was cancelled"}


@dataclass
class Change:
    run_id: str
    old: str | None
    new: str
    verdict: str | None

    def message(self) -> str:
        if self.new in FINAL:
            verdict = f" ({self.verdict})" if self.verdict else ""
            return f"rl-console: run {self.run_id} {FINAL[self.new]}{verdict}"
        return f"rl-console: run {self.run_id} is {self.new}"


class StateWatcher:
    """Compares successive run listings; the first one only learns the states (no alerts)."""

    def __init__(self) -> None:
        self._known: dict[str, str] | None = None

    def changes(self, rows: list[RunRow]) -> list[Change]:
        now = {r.id: r.status for r in rows}
        out: list[Change] = []
        if self._known is not None:
            for row in rows:
                old = self._known.get(row.id)
                if old != row.status and (old is not None or row.status not in ("pending",)):
                    out.append(Change(row.id, old, row.status, row.verdict))
        self._known = now
        return out


def settings(config: dict[str, object]) -> dict[str, bool]:
    return {ch: bool(config.get(f"notify_{ch}", True)) for ch in CHANNELS}


def osc9(message: str) -> str:
    clean = "".join(c for c in message if c.isprintable() and c not in "\x1b\x07")
    return f"\x1b]9;{clean}\x07"


def tmux_display(message: str) -> bool:
    """``tmux display-message`` for the client of the tmux the console runs in; False outside tmux."""
    if not os.environ.get("TMUX") or shutil.which("tmux") is None:
        return False
    try:
        subprocess.run(
            ["tmux", "display-message", "-d", "8000", message],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=3,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def announce(change: Change, enabled: dict[str, bool], write: Callable[[str], None]) -> list[str]:
    """Send ``change`` on every enabled channel; returns the channels used."""
    used = []
    text = change.message()
    if enabled.get("bell"):
        write("\a")
        used.append("bell")
    if enabled.get("osc9"):
        write(osc9(text))
        used.append("osc9")
    if enabled.get("tmux") and tmux_display(text):
        used.append("tmux")
    return used
