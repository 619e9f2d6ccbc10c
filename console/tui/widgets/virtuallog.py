"""A log view over a :class:`LineIndex`: the whole file scrolls, only visible rows are read, and
``goto(n)`` waits for the index to reach line n, then centres and highlights it."""

from __future__ import annotations

import re
import time
from pathlib import Path

from rich.segment import Segment
from rich.text import Text
from textual import work
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import get_current_worker

from console.tui.lineindex import LineIndex
from console.tui.messages import Replaceable
from console.tui.widgets.logview import LogHighlighter

FOLLOW_POLL_S = 0.25


class IndexGrew(Replaceable):
    """The index has more lines (or restarted after truncation/rotation); the view posts it to itself."""


class VirtualLogView(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    VirtualLogView { height: 1fr; }
    VirtualLogView > .virtuallog--target { background: $accent 40%; }
    VirtualLogView > .virtuallog--gutter { color: $text-muted; }
    """
    COMPONENT_CLASSES = {"virtuallog--target", "virtuallog--gutter"}

    def __init__(self, path: Path, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.index = LineIndex(path)
        self.target: int | None = None  # 1-based line to show highlighted
        self._pending_goto: int | None = None
        self.highlighter = LogHighlighter()  # error/warning words and the search term
        self.follow = False
        self._width = 0
        self._generation = 0

    def on_mount(self) -> None:
        self.build_index(self.index)

    def on_unmount(self) -> None:
        self.index.close()

    @work(thread=True, exclusive=True, group="virtuallog")
    def build_index(self, index: LineIndex) -> None:
        worker = get_current_worker()
        while not worker.is_cancelled:
            if not index.scan_done:
                index.scan()
                self.post_message(IndexGrew())
                time.sleep(0.001)  # let the UI thread take the GIL between chunks
                continue
            if index.follow_poll():
                self.post_message(IndexGrew())
                continue
            worker.cancelled_event.wait(FOLLOW_POLL_S)

    def on_index_grew(self, message: IndexGrew) -> None:
        message.stop()
        index = self.index
        if index.generation != self._generation:  # truncated or rotated: start over
            self._generation = index.generation
            self._width = 0
            self.target = None
        count = index.line_count
        at_end = self.scroll_offset.y >= self.max_scroll_y
        self.virtual_size = Size(max(self._width, self.size.width), count)
        if self._pending_goto is not None and self._pending_goto <= count:
            line, self._pending_goto = self._pending_goto, None
            self.goto(line)
        elif self.follow and at_end:
            self.scroll_to(
                y=max(0, count - self.scrollable_content_region.height),
                animate=False,
                immediate=True,
                force=True,
            )
        self.refresh()

    @property
    def line_count(self) -> int:
        return self.index.line_count

    def status(self) -> str:
        """One line for a status bar: lines known, indexing progress, pending jump."""
        index = self.index
        parts = [f"{index.line_count:,} lines"]
        if not index.scan_done:
            parts.append(f"indexing {index.progress():.0%}")
        if self._pending_goto is not None:
            parts.append(f"going to line {self._pending_goto:,} once indexed")
        if index.generation:
            parts.append(f"file restarted x{index.generation}")
        return " · ".join(parts)

    def goto(self, line: int) -> bool:
        """Centre line ``line`` (1-based) and highlight it; False when it is not indexed yet."""
        self.target = max(1, line)
        if line > self.index.line_count:
            self._pending_goto = line
            self.refresh()
            return False
        self._pending_goto = None
        self.virtual_size = Size(max(self._width, self.size.width), self.index.line_count)
        y = max(0, line - 1 - self.scrollable_content_region.height // 2)
        self.scroll_to(y=y, animate=False, immediate=True, force=True)
        self.refresh()
        return True

    def set_search(self, text: str) -> None:
        self.highlighter.search = re.compile(re.escape(text), re.IGNORECASE) if text else None
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        number = scroll_y + y + 1
        width = self.scrollable_content_region.width
        if number > self.index.line_count:
            return Strip.blank(width, self.rich_style)
        text = self.index.line(number)
        gutter_w = max(6, len(str(self.index.line_count)) + 1)
        body = Text(text, no_wrap=True, end="")
        self.highlighter.highlight(body)
        base = self.rich_style
        if number == self.target:
            base = base + self.get_component_rich_style("virtuallog--target")
        gutter = Segment(
            f"{number:>{gutter_w - 1}} ", base + self.get_component_rich_style("virtuallog--gutter")
        )
        segments = [
            Segment(seg.text, base + seg.style if seg.style else base)
            for seg in body.render(self.app.console)
        ]
        line_w = gutter_w + body.cell_len
        if line_w > self._width:
            self._width = line_w
            self.call_later(self._grow_width)
        strip = Strip(segments).crop(scroll_x, scroll_x + width - gutter_w)
        return Strip([gutter, *strip]).adjust_cell_length(width, base)

    def _grow_width(self) -> None:
        if self._width > self.virtual_size.width:
            self.virtual_size = Size(self._width, self.index.line_count)
