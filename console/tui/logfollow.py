"""The live log view's reader: the monitor's ``Tailer``, opened at the last ``initial_tail`` bytes of a
big file (from a line boundary); an over-long line is shown once, cut to ``max_line`` characters."""

from __future__ import annotations

import os
from pathlib import Path

from console.monitor.tailer import Tailer

INITIAL_TAIL = 2 * 1024 * 1024
MAX_BYTES = 4 * 1024 * 1024
MAX_LINE = 8192


class LogFollower:
    def __init__(self, path: Path, *, initial_tail: int = INITIAL_TAIL, max_line: int = MAX_LINE) -> None:
        self.path = path
        self.initial_tail = initial_tail
        self.max_line = max_line
        self.skipped_bytes = 0  # bytes before the first line shown (big files opened at the tail)
        self._tailer: Tailer | None = None
        self._drop_first = False  # the first line read starts mid-line: not shown
        self._last_cut = -1  # lineno of the last over-long line shown (its further chunks are not)

    @property
    def resets(self) -> int:
        return 0 if self._tailer is None else self._tailer.rotations + self._tailer.truncations

    @property
    def backlog(self) -> bool:
        """More bytes were waiting than one poll may read."""
        return self._tailer is not None and not self._tailer.caught_up

    def _open(self, max_bytes: int) -> Tailer | None:
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return None
        start = size - self.initial_tail if size > self.initial_tail else 0
        self.skipped_bytes = start
        self._drop_first = start > 0
        return Tailer(
            self.path,
            offset=start,
            max_line_bytes=max(64, self.max_line),
            read_bytes=max_bytes,
            emit_partial=False,
        )

    def poll(self, max_bytes: int = MAX_BYTES) -> list[str]:
        if self._tailer is None:
            self._tailer = self._open(max_bytes)
            if self._tailer is None:
                return []
        out: list[str] = []
        for line in self._tailer.poll(max_bytes):
            if self._drop_first and line.lineno == 1:
                continue
            if line.truncated:
                if line.lineno == self._last_cut:
                    continue
                self._last_cut = line.lineno
            out.append(line.text[: self.max_line])
        if out:
            self._drop_first = False
        return out
