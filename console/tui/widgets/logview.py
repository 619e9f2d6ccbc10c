"""Live log view: a bounded ``Log`` with search highlighting, filter-to-matching-lines, wrap, follow."""

from __future__ import annotations

import re
import textwrap
from collections import deque
from collections.abc import Iterable
from functools import partial

from rich.highlighter import Highlighter
from rich.text import Text
from textual.widgets import Log

KEEP_LINES = 50_000  # lines kept in memory for filter/search/wrap rebuilds
_LEVEL_STYLES = (
    (re.compile(r"\b(ERROR|Error|FAILED|Traceback|CRITICAL|FATAL)\b"), "bold red"),
    (re.compile(r"\b(WARNING|WARN|Warning)\b"), "yellow"),
)


class LogHighlighter(Highlighter):
    """Colours error/warning words and the current search term."""

    def __init__(self) -> None:
        self.search: re.Pattern[str] | None = None

    def highlight(self, text: Text) -> None:
        plain = text.plain
        for rx, style in _LEVEL_STYLES:
            for m in rx.finditer(plain):
                text.stylize(style, m.start(), m.end())
        if self.search is not None:
            for m in self.search.finditer(plain):
                text.stylize("reverse bold", m.start(), m.end())


def _pattern(term: str) -> re.Pattern[str]:
    return re.compile(re.escape(term), re.IGNORECASE)


class LogView(Log):
    """Append with :meth:`append_lines`; everything else rebuilds from the kept lines."""

    DEFAULT_CSS = """
    LogView { height: 1fr; border: none; }
    """

    def __init__(self, *, max_lines: int = 20_000, id: str | None = None) -> None:
        super().__init__(highlight=True, max_lines=max_lines, auto_scroll=True, id=id)
        self.highlighter: LogHighlighter = LogHighlighter()
        self.kept: deque[str] = deque(maxlen=KEEP_LINES)
        self.total_lines = 0
        self.filter_text = ""
        self.search_text = ""
        self.wrap = False
        self._filter_rx: re.Pattern[str] | None = None
        self._search_hit = -1

    def append_lines(self, lines: Iterable[str]) -> None:
        batch = list(lines)
        if not batch:
            return
        self.kept.extend(batch)
        self.total_lines += len(batch)
        shown = self._visible(batch)
        if shown:
            self.write_lines(shown)

    def reset(self) -> None:
        self.kept.clear()
        self.total_lines = 0
        self.clear()

    def _visible(self, batch: Iterable[str]) -> list[str]:
        rx = self._filter_rx
        lines = [ln for ln in batch if rx.search(ln)] if rx is not None else list(batch)
        if self.wrap:
            width = max(20, (self.scrollable_content_region.width or 80) - 1)
            wrap = partial(textwrap.wrap, width=width, drop_whitespace=False, break_on_hyphens=False)
            return [part for ln in lines for part in (wrap(ln) if len(ln) > width else [ln])]
        return lines

    def rebuild(self) -> None:
        follow = self.auto_scroll
        self.clear()
        shown = self._visible(self.kept)
        if shown:
            self.write_lines(shown, scroll_end=follow)
        self.refresh()

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        self._filter_rx = _pattern(text) if text else None
        self.rebuild()

    def set_search(self, text: str) -> int | None:
        """Highlight ``text`` and jump to its last occurrence; returns that line or None."""
        self.search_text = text
        self.highlighter.search = _pattern(text) if text else None
        self._render_line_cache.clear()
        self._search_hit = len(self.lines)
        self.refresh()
        return self.search_next(backwards=True) if text else None

    def search_next(self, backwards: bool = False) -> int | None:
        rx = self.highlighter.search
        if rx is None:
            return None
        lines = self.lines
        n = len(lines)
        if n == 0:
            return None
        start = self._search_hit if 0 <= self._search_hit <= n else n
        order = range(start - 1, -1, -1) if backwards else range(start + 1, n)
        for y in order:
            if rx.search(lines[y]):
                self._search_hit = y
                self.auto_scroll = False
                self.scroll_to(y=max(0, y - self.scrollable_content_region.height // 2), animate=False)
                return y
        return None

    def toggle_wrap(self) -> None:
        self.wrap = not self.wrap
        self.rebuild()

    def toggle_follow(self) -> None:
        self.auto_scroll = not self.auto_scroll
        if self.auto_scroll:
            self.scroll_end(animate=False)

    def on_resize(self) -> None:
        if self.wrap:
            self.rebuild()
