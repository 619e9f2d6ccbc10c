"""Logs as people paste them: undo what the paste did to whole lines before triage reads them.

Two forms change every line of a log, so no rule literal or traceback shape matches any more:
- indented as a whole (a markdown code block indented by 4 spaces): ``Dedented`` removes the shared
  indentation from the start of each line;
- hard-wrapped at a fixed width (copied from a terminal, a pager or a web log viewer that breaks long
  lines into rows of exactly N characters): ``Unwrapped`` joins each row of that width to the row after
  it, so "Watchdog caught collective opera" + "tion timeout" reads as one line again.

Both keep physical line numbers: a joined line takes the place of its last row and the rows before it
become empty lines. Each is decided once from the log's head (``PROBE`` bytes); a log written by a
process (not pasted) has neither form and is read as it is.
"""

from __future__ import annotations

import os
import re
from typing import BinaryIO

from console.triage.fastscan import ByteReader

PROBE = 65536  # the head whose lines decide whether a log was pasted indented or hard-wrapped
WRAP_WIDTHS = (60, 400)  # the row widths a terminal or viewer wraps at
_ENDS = (
    b"",
    b" ",
    b"\t",
    b"|",
    b"+",
    b")",
    b"]",
    b"}",
    b">",
    b".",
    b":",
)  # a row ending so ended its own line
JOIN_CAP = 1 << 20  # a line longer than this is let through in parts, unjoined


def _head_lines(fh: BinaryIO) -> list[bytes]:
    """The complete lines of the log's head (the reader is put back at the start)."""
    if not fh.seekable():
        return []
    head = fh.read(PROBE)
    fh.seek(0)
    lines = head.split(b"\n")
    if len(head) == PROBE:
        lines.pop()  # cut by the probe
    return lines


def paste_indent(fh: BinaryIO) -> bytes:
    """The indentation every non-empty line of the log's head shares (a log pasted indented, e.g. as a
    markdown code block), or b"". The reader is put back at the start."""
    return _indent_of(_head_lines(fh))


def _indent_of(lines: list[bytes]) -> bytes:
    common = os.path.commonprefix([line for line in lines if line.strip()]) or b""
    return common[: len(common) - len(common.lstrip(b" \t"))]


def _width(line: bytes) -> int:
    return len(line.rstrip(b"\r").decode("utf-8", "replace"))


def _start(row: bytes) -> bytes:
    """The shape of a row's first word (digits folded): the same for every record of one log format."""
    return re.sub(rb"\d+", b"0", row.split(None, 1)[0] if row.strip() else b"")


def wrap_width(fh: BinaryIO) -> int:
    """The width the log's head was hard-wrapped at, or 0. A wrapped paste has several different rows of
    exactly its longest width, most of which stop where no line would (not after a space, a closing
    bracket, a table border, "." or ":") and go on in a row that does not start like the log's lines do:
    its first word (digits folded) starts no line that follows a shorter row, nor the row itself. Rows of
    one width that a process prints itself (NCCL channel lines, nvidia-smi tables, progress bars) fail
    one of these. The reader is put back at the start."""
    return _wrap_of(_head_lines(fh))


def _wrap_of(head: list[bytes]) -> int:
    lines = [line.rstrip(b"\r") for line in head]
    widths = [_width(line) for line in lines]
    width = max(widths, default=0)
    if not WRAP_WIDTHS[0] <= width <= WRAP_WIDTHS[1]:
        return 0
    rows = [i for i in range(len(lines) - 1) if widths[i] == width]
    starts = {_start(lines[i]) for i in range(len(lines)) if i == 0 or widths[i - 1] != width}
    wraps = [
        i
        for i in rows
        if lines[i][-1:] not in _ENDS
        and lines[i + 1][:1].strip()
        and _start(lines[i + 1]) not in {*starts, _start(lines[i])}
    ]
    if len({lines[i] for i in wraps}) < 2 or 2 * len(wraps) < len(rows):
        return 0
    return width


class Dedented:
    """A binary reader of a log with ``indent`` removed from the start of every line that has it: the
    same lines, numbered alike, as the log was before it was pasted indented."""

    def __init__(self, fh: ByteReader, indent: bytes) -> None:
        self.fh, self.indent = fh, indent
        self._hold = b""  # a line's start shorter than the indent, completed by the next read
        self._bol = True  # the next byte starts a line

    def read(self, size: int = -1) -> bytes:
        while True:
            raw = self.fh.read(size)
            data, self._hold = self._hold + raw, b""
            if raw:
                start = data.rfind(b"\n") + 1 if b"\n" in data else (0 if self._bol else len(data))
                if len(data) - start < len(self.indent) and (start or self._bol):
                    data, self._hold = data[:start], data[start:]
            if self._bol and data.startswith(self.indent):
                data, self._bol = data[len(self.indent) :], False
            if data or not raw:
                break
        if data:
            self._bol = data.endswith(b"\n")
        return data.replace(b"\n" + self.indent, b"\n")


class Unwrapped:
    """A binary reader of a log hard-wrapped at ``width`` characters: every row of exactly that width is
    joined to the row after it. The joined line is numbered as its last row; its earlier rows read empty."""

    def __init__(self, fh: ByteReader, width: int) -> None:
        self.fh, self.width = fh, width
        self._rest = b""  # the unfinished last line of the previous read
        self._join: list[bytes] = []  # full-width rows waiting for the row that ends their line
        self._mid = False  # a giant line was let through in parts: its end is not a row

    def _line(self, row: bytes, out: list[bytes]) -> None:
        if _width(row) == self.width and not self._mid:
            self._join.append(row.rstrip(b"\r"))
            return
        out.append(self._flush() + row + b"\n")
        self._mid = False

    def _flush(self) -> bytes:
        """The waiting rows as one line's start, after as many empty lines as they had newlines."""
        joined = b"\n" * len(self._join) + b"".join(self._join)
        self._join.clear()
        return joined

    def read(self, size: int = -1) -> bytes:
        out: list[bytes] = []
        while not out:
            raw = self.fh.read(size)
            if not raw:
                if self._rest:  # the log's last line, with no newline: nothing follows to join
                    out.append(self._flush() + self._rest)
                    self._rest = b""
                elif self._join:
                    out.append(self._flush()[1:] + b"\n")
                return b"".join(out)
            rows = (self._rest + raw).split(b"\n")
            self._rest = rows.pop()
            for row in rows:
                self._line(row, out)
            if len(self._rest) > JOIN_CAP:  # a giant line: let it through in parts, unjoined
                out.append(self._flush() + self._rest)
                self._rest, self._mid = b"", True
        return b"".join(out)


def pasted_reader(fh: BinaryIO) -> ByteReader:
    """``fh`` itself, or a reader that undoes the log's paste form (a hard wrap, then an indentation)."""
    head = _head_lines(fh)
    width, indent = _wrap_of(head), _indent_of(head)
    src: ByteReader = Unwrapped(fh, width) if width else fh
    return Dedented(src, indent) if indent else src
