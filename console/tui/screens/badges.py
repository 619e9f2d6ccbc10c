"""Verdict/status badges shared by the screens."""

from __future__ import annotations

from rich.text import Text

_VERDICT_STYLE = {
    "Pass": "bold green",
    "Fail": "bold red",
    "Blocked": "bold yellow",
    "Incomplete": "yellow",
    "Cancelled": "magenta",
    "Skipped": "dim",
    "Not requested": "dim",
    "Noise": "dim",
}
_STATUS_STYLE = {
    "running": "bold cyan",
    "pending": "cyan",
    "passed": "green",
    "failed": "red",
    "blocked": "yellow",
    "cancelled": "magenta",
    "skipped": "dim",
}


def verdict_badge(verdict: str | None, status: str | None = None) -> Text:
    if verdict:
        return Text(f" {verdict} ", style=_VERDICT_STYLE.get(verdict, "bold"))
    if status in ("running", "pending"):
        return Text(f"● {status}", style=_STATUS_STYLE[status])
    return Text("-", style="dim")


def status_text(status: str | None) -> Text:
    status = status or "?"
    return Text(status, style=_STATUS_STYLE.get(status, ""))
