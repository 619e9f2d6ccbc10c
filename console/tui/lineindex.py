"""A lazy line index over a whole log file, so any line of a multi-GB log is one ``os.pread`` away.

Checkpoints (line number, byte offset of its start) every ``STRIDE`` lines and after every gap over
``GAP`` bytes, so reaching a line reads at most ``STRIDE`` ordinary lines: ~13 MB for a 5 GB log of
100-byte lines, not the 400 MB of a full offset table. ``scan()`` indexes forward in bounded chunks
(from a worker, until it returns False); then the monitor's ``Tailer`` follows the file, and a
truncated or rotated one is indexed again (``generation`` counts those). Lines are read with
``os.pread`` (no shared file position), cut at ``max_line`` bytes, cleaned and LRU-cached.
"""

from __future__ import annotations

import contextlib
import os
import threading
from array import array
from bisect import bisect_right
from collections import OrderedDict
from pathlib import Path

import numpy as np

from console.monitor.tailer import Tailer
from console.monitor.text import clean_line

STRIDE = 64
GAP = 1 << 20
CHUNK = 16 << 20
MAX_LINE = 4096
CACHE_LINES = 20_000


def _newlines(chunk: bytes) -> list[int]:
    """Positions of every ``\\n`` in ``chunk`` (found by numpy, in C)."""
    positions: list[int] = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10).tolist()
    return positions


class LineIndex:
    """Thread-safe: one worker calls :meth:`scan` / :meth:`follow_poll`, the UI reads lines."""

    def __init__(
        self, path: str | os.PathLike[str], *, max_line: int = MAX_LINE, cache_lines: int = CACHE_LINES
    ) -> None:
        self.path = Path(path)
        self.max_line = max_line
        self.cache_lines = cache_lines
        self.generation = 0  # bumps when the file was truncated or rotated and indexing restarted
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._cache: OrderedDict[int, str] = OrderedDict()
        self._tailer: Tailer | None = None
        self._uncached: tuple[int, str] = (0, "")
        self._reset()

    def _reset(self) -> None:
        self._cp_line = array("Q", [0])  # 0-based line numbers of checkpoints
        self._cp_off = array("Q", [0])
        self._lines = 0  # complete lines indexed
        self._scanned = 0  # bytes scanned: the start of the first line not yet complete
        self._last_start = 0  # start offset of the last complete line + 1 (next line start)
        self._size_at_open = -1
        self._scan_raw = 0  # bytes of the first scan read so far
        self._scan_done = False
        self._cache.clear()

    @property
    def line_count(self) -> int:
        """Lines readable now (complete lines, plus the unterminated last one once scanned)."""
        with self._lock:
            return self._lines + (1 if self._scan_done and self._tail_bytes() > 0 else 0)

    @property
    def scan_done(self) -> bool:
        return self._scan_done

    def progress(self) -> float:
        """Fraction of the file indexed by the first scan (1.0 once following)."""
        if self._scan_done or self._size_at_open <= 0:
            return 1.0
        return min(1.0, self._scanned / self._size_at_open)

    def _tail_bytes(self) -> int:
        try:
            return os.fstat(self._fd).st_size - self._scanned if self._fd is not None else 0
        except OSError:
            return 0

    def close(self) -> None:
        with self._lock:
            self._release()

    def _release(self) -> None:
        """Close the file and the live tail (the caller holds the lock where one is needed)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        if self._tailer is not None:
            self._tailer.close()
            self._tailer = None

    def _open(self) -> bool:
        if self._fd is not None:
            return True
        try:
            self._fd = os.open(self.path, os.O_RDONLY)
            self._size_at_open = os.fstat(self._fd).st_size
        except OSError:
            self._fd = None
            return False
        return True

    def _add_line_starts(self, starts: list[int]) -> None:
        """Record the starts of lines ``self._lines + 1 ...`` (each after a complete line)."""
        cp_line, cp_off = self._cp_line, self._cp_off
        last_cp_line = cp_line[-1]
        prev = self._last_start
        n = self._lines
        for start in starts:
            n += 1
            if n - last_cp_line >= STRIDE or start - prev > GAP:
                cp_line.append(n)
                cp_off.append(start)
                last_cp_line = n
            prev = start
        self._lines = n
        if starts:
            self._last_start = starts[-1]

    def _add_newlines(self, base: int, nls: list[int]) -> None:
        if len(nls) > 4 * STRIDE:
            self._add_many(base, nls)
        else:
            self._add_line_starts([base + p + 1 for p in nls])

    def _add_many(self, base: int, nls: list[int]) -> None:
        """Vectorised :meth:`_add_line_starts` for big chunks with no long gap (same checkpoints)."""
        starts = np.asarray(nls, dtype=np.int64) + (base + 1)
        if int(starts[0]) - self._last_start > GAP or bool((np.diff(starts) > GAP).any()):
            self._add_line_starts(starts.tolist())
            return
        numbers = np.arange(self._lines + 1, self._lines + 1 + len(starts), dtype=np.int64)
        pick = ((numbers - int(self._cp_line[-1])) % STRIDE) == 0
        self._cp_line.extend(numbers[pick].tolist())
        self._cp_off.extend(starts[pick].tolist())
        self._lines = int(numbers[-1])
        self._last_start = int(starts[-1])

    def scan(self, budget: int | None = None) -> bool:
        """Index more of the first scan (1 MB first, growing to ``CHUNK``); False once at the end. The read
        and the newline search run outside the lock, so the UI reads lines meanwhile."""
        with self._lock:
            if self._scan_done or not self._open():
                return False
            fd, end, pos, gen = self._fd, self._size_at_open, self._scan_raw, self.generation
            if pos >= end:
                self._finish_scan()
                return False
            want = min(budget or min(CHUNK, max(1 << 20, pos)), end - pos)
        try:
            chunk = os.pread(fd, want, pos)  # type: ignore[arg-type]
        except OSError:
            chunk = b""
        nls = _newlines(chunk) if chunk else []
        with self._lock:
            if gen != self.generation or self._fd != fd or self._scan_raw != pos:
                return True  # restarted meanwhile: the next call scans the new file
            if not chunk:
                self._finish_scan()
                return False
            self._add_newlines(pos, nls)
            self._scan_raw = pos + len(chunk)
            self._scanned = self._last_start
            if self._scan_raw >= end:
                self._finish_scan()
                return False
            return True

    def _finish_scan(self) -> None:
        self._scan_done = True
        self._scanned = self._last_start
        self._tailer = Tailer(
            self.path,
            offset=self._last_start,
            lineno=self._lines,
            max_line_bytes=max(64, self.max_line),
            emit_partial=False,
        )

    def follow_poll(self, max_bytes: int = 4 << 20) -> bool:
        """After the first scan: index what was appended; True when lines were added or reset."""
        with self._lock:
            tailer = self._tailer
            if tailer is None:
                return False
            resets = tailer.rotations + tailer.truncations
            lines = tailer.poll(max_bytes)
            if tailer.rotations + tailer.truncations != resets:
                self._restart()
                return True
            first: dict[int, int] = {}
            for line in lines:  # \r redraws and cut giant lines repeat a lineno: keep its start
                first.setdefault(line.lineno, line.offset)
            done = tailer.lineno  # complete lines now; tailer.offset starts the unfinished one
            if done <= self._lines:
                return False
            after: list[int] = []
            for m in range(self._lines + 1, done + 1):
                nxt = tailer.offset if m == done else first.get(m + 1)
                if nxt is None:  # a line the tailer emitted nothing for: find its end ourselves
                    nxt = self._next_start(after[-1] if after else self._last_start)
                after.append(nxt)
            self._add_line_starts(after)
            self._scanned = self._last_start
            return True

    def _next_start(self, off: int) -> int:
        assert self._fd is not None
        while True:
            block = os.pread(self._fd, 1 << 16, off)
            if not block:
                return off
            nl = block.find(b"\n")
            if nl >= 0:
                return off + nl + 1
            off += len(block)

    def _restart(self) -> None:
        """The file was truncated or replaced: index it again from its start."""
        self._release()
        self._reset()
        self.generation += 1

    def line(self, number: int) -> str:
        """Line ``number`` (1-based), cleaned and cut at ``max_line`` bytes; "" when not indexed."""
        with self._lock:
            cached = self._cache.get(number)
            if cached is not None:
                self._cache.move_to_end(number)
                return cached
            if number < 1 or self._fd is None:
                return ""
            limit = self._lines + (1 if self._scan_done else 0)
            if number > limit:
                return ""
            self._uncached = (0, "")
            self._load_block(number - 1)
            if self._uncached[0] == number:
                return self._uncached[1]
            return self._cache.get(number, "")

    def _load_block(self, index: int) -> None:
        """Read from the checkpoint at or before 0-based line ``index`` and cache its lines."""
        k = bisect_right(self._cp_line, index) - 1
        line_no, off = self._cp_line[k], self._cp_off[k]
        stop_line = self._cp_line[k + 1] if k + 1 < len(self._cp_line) else self._lines
        stop_off = self._cp_off[k + 1] if k + 1 < len(self._cp_line) else None
        assert self._fd is not None
        while line_no <= index or line_no < stop_line:
            text, next_off = self._read_line(off, stop_off)
            if line_no >= self._lines:  # the unterminated last line still grows: not cached
                self._uncached = (line_no + 1, text)
                break
            self._remember(line_no + 1, text)
            if next_off is None:
                break
            line_no, off = line_no + 1, next_off
            if stop_off is not None and off >= stop_off:
                break

    def _read_line(self, off: int, stop_off: int | None) -> tuple[str, int | None]:
        """The line starting at ``off``: (cleaned text cut at max_line, start of the next line)."""
        assert self._fd is not None
        head = os.pread(self._fd, self.max_line + 1, off)
        nl = head.find(b"\n")
        if nl >= 0:
            return clean_line(head[:nl]), off + nl + 1
        text = clean_line(head[: self.max_line]) + (" …" if len(head) > self.max_line else "")
        pos = off + len(head)
        # the next checkpoint (stop_off) may be the next line: no need to search past it
        while stop_off is None or pos < stop_off:
            block = os.pread(self._fd, CHUNK if stop_off is None else min(CHUNK, stop_off - pos), pos)
            if not block:
                return text, None
            nl = block.find(b"\n")
            if nl >= 0:
                return text, pos + nl + 1
            pos += len(block)
        return text, stop_off

    def _remember(self, number: int, text: str) -> None:
        self._cache[number] = text
        self._cache.move_to_end(number)
        while len(self._cache) > self.cache_lines:
            self._cache.popitem(last=False)

    def memory_bytes(self) -> int:
        """Rough size of the index itself (checkpoints), for benchmarks."""
        return (len(self._cp_line) + len(self._cp_off)) * 8
