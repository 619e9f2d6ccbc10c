"""Bounded incremental reading of a growing log file for the live view (no Textual here).

Reads from the last offset, at most ``max_bytes`` per poll, so a huge or fast-growing file never
blocks the caller for long. On first open of a big file only its last ``initial_tail`` bytes are
read. Truncation (size below the offset) and rotation (a new inode) restart from the beginning.
Lines are cleaned with ``console.monitor.text.clean_line`` (ANSI stripped, ``\\r`` redraws
collapsed, bad UTF-8 replaced); over-long lines are cut to ``max_line`` characters.
"""

from __future__ import annotations

import os
from pathlib import Path

from console.monitor.text import clean_line

INITIAL_TAIL = 2 * 1024 * 1024
MAX_BYTES = 4 * 1024 * 1024
MAX_LINE = 8192


class LogFollower:
    def __init__(self, path: Path, *, initial_tail: int = INITIAL_TAIL, max_line: int = MAX_LINE) -> None:
        self.path = path
        self.offset: int | None = None
        self.inode: int | None = None
        self.initial_tail = initial_tail
        self.max_line = max_line
        self.skipped_bytes = 0  # bytes before the first line shown (big files opened at the tail)
        self.resets = 0
        self.backlog = False  # more bytes were waiting than one poll may read
        self._partial = b""

    def _start(self, size: int) -> None:
        self._partial = b""
        if size > self.initial_tail:
            self.offset = size - self.initial_tail
            self.skipped_bytes = self.offset
            self._skip_to_newline = True
        else:
            self.offset = 0
            self._skip_to_newline = False

    def poll(self, max_bytes: int = MAX_BYTES) -> list[str]:
        try:
            st = os.stat(self.path)
        except OSError:
            return []
        if self.offset is None:
            self.inode = st.st_ino
            self._start(st.st_size)
        elif st.st_ino != self.inode or st.st_size < (self.offset or 0):
            self.inode = st.st_ino
            self.resets += 1
            self.offset = 0
            self._partial = b""
            self._skip_to_newline = False
        assert self.offset is not None
        if st.st_size <= self.offset:
            return []
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read(min(max_bytes, st.st_size - self.offset))
        except OSError:
            return []
        self.offset += len(chunk)
        self.backlog = st.st_size > self.offset
        data = self._partial + chunk
        if self._skip_to_newline:
            cut = data.find(b"\n")
            if cut < 0:
                self._partial = b""
                return []
            data = data[cut + 1:]
            self._skip_to_newline = False
        end = data.rfind(b"\n")
        if end < 0:
            self._partial = data
            if len(self._partial) > self.max_line * 4:  # a giant line without newline: show its start
                self._partial = b""
                return [clean_line(data[: self.max_line])]
            return []
        self._partial = data[end + 1:]
        lines = data[:end].split(b"\n")
        out = []
        for raw in lines:
            if len(raw) > self.max_line:
                raw = raw[: self.max_line]
            out.append(clean_line(raw))
        return out
