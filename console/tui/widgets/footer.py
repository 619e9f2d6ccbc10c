"""The footer every screen uses: compact, with q (quit), ? (help), r (report) and t (theme) first,
which Textual's own footer (the focused widget's and the screen's keys first) cut off at 80 columns."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer

FIRST = ("quit", "app.quit", "help", "app.help", "report", "rerun_fix", "cycle_theme", "app.cycle_theme")


def _rank(widget: object) -> int:
    action = str(getattr(widget, "action", "") or "")
    if "-command-palette" in getattr(widget, "classes", ()):
        return len(FIRST) + 1
    return FIRST.index(action) if action in FIRST else len(FIRST)


class ConsoleFooter(Footer):
    def __init__(self) -> None:
        super().__init__(compact=True)

    def compose(self) -> ComposeResult:
        widgets = list(super().compose())
        yield from sorted(widgets, key=_rank)
