"""Logs as people paste them: undo what the paste did to whole lines before triage reads them.

Some paste forms change every line of a log, so no rule literal or traceback shape matches any more:
- colour codes that lost their ESC byte in the copy ("[36m(pid=12)[0m ..."): ``Decolored`` drops them;
- a line number in front of every line (``grep -n``, ``cat -n``, a log viewer's gutter): ``Unnumbered``
  removes the number and its separator;
- hard-wrapped at a fixed width (copied from a terminal, a pager or a web log viewer that breaks long
  lines into rows of exactly N characters): ``Unwrapped`` joins each row of that width to the row after
  it, so "Watchdog caught collective opera" + "tion timeout" reads as one line again;
- indented as a whole (a markdown code block indented by 4 spaces): ``Dedented`` removes the shared
  indentation from the start of each line.

All keep physical line numbers (a joined line takes the place of its last row and the rows before it
become empty lines). Each form is decided once from the log's head (``PROBE`` bytes); a log written by a
process (not pasted) has none of them and is read as it is.
"""

from __future__ import annotations

import io
import os
import re
from typing import BinaryIO

from console.triage.engine import TF1_REFERRAL, split_prefix
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
PREFIX_MAX = 100  # a collector's prefix is a short tag (host, time, pod, process)
ROW_CAP = 1 << 20  # a row longer than this is let through in parts, unchanged after its start


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
    one width that a process prints itself (NCCL channel lines, nvidia-smi tables, progress bars, a runtime's
    table of frames whose columns line up row after row) fail one of these. The reader is put back at the start."""
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
        and not _same_columns(lines[i], lines[i + 1])
    ]
    if len({lines[i] for i in wraps}) < 2 or 2 * len(wraps) < len(rows):
        return 0
    return width


_GAP_RE = re.compile(rb"  +(?=\S)")


def _same_columns(row: bytes, after: bytes) -> bool:
    """Two rows of one printed table: their columns (text after a gap of two or more spaces) start at the
    same places. A row cut by a hard wrap goes on in a line whose gaps fall anywhere."""
    cols = [m.end() for m in _GAP_RE.finditer(row)]
    return len(cols) >= 2 and cols == [m.end() for m in _GAP_RE.finditer(after)]


_NUMBER_RE = re.compile(rb"[ \t]*\[?(\d{1,9})\]?(?=[ \t:|\]-]|\r?$)")
_SEP_CHARS = b" \t:|-"
_LOST_SGR_RE = re.compile(rb"(?<!\x1b)\[\d{1,3}(?:;\d{1,3})*m")


def _numbering_of(lines: list[bytes]) -> bytes | None:
    """The separator after a line number that every line of the head starts with, or None. Numbered: at
    least 3 non-empty lines, 9 in 10 of them led by a number, the numbers strictly increasing and most
    one more than the line before (``grep -n`` skips lines; a step or rank column never does both)."""
    found = [(m, line) for line in lines if line.strip() and (m := _NUMBER_RE.match(line)) is not None]
    if len(found) < 3 or 10 * len(found) < 9 * len([line for line in lines if line.strip()]):
        return None
    numbers = [int(m.group(1)) for m, _ in found]
    steps = [b - a for a, b in zip(numbers, numbers[1:], strict=False)]
    if min(steps) < 1 or 2 * steps.count(1) < len(steps):
        return None
    seps = []
    for m, line in found:
        rest = line[m.end() :].rstrip(b"\r")
        sep = rest[: len(rest) - len(rest.lstrip(_SEP_CHARS))]
        if len(sep) < len(rest):  # a numbered line with text: its separator counts
            seps.append(sep)
    return os.path.commonprefix(seps) or b"" if seps else None


def _shape(text: bytes) -> bytes:
    """A pattern of ``text`` with each digit run matching any digits."""
    return b"".join(rb"\d+" if part.isdigit() else re.escape(part) for part in re.split(rb"(\d+)", text))


_LEVEL_RE = re.compile(rb"\b(?:DEBUG|INFO|WARN(?:ING)?|ERROR|CRITICAL|FATAL)\b")
_TRACEBACK_AT_RE = re.compile(
    rb'Traceback \(most recent call last\):|[ \t]+File "[^"\n]+", line \d+'
    rb"|(?<=\s)(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:\(\w+\))?(?: "
    + re.escape(TF1_REFERRAL).encode()
    + rb")?: "
    rb"|[ \t]+[\w./-]+\.py:\d+: in [\w<>.]+\r?$"  # a pytest frame
    rb"|(?<=\s)Thread (?:0x)?[0-9a-fA-F]+ \((?:active|idle)"  # a py-spy dump's thread
)


def _collector_prefix(lines: list[bytes]) -> re.Pattern[bytes] | None:
    """A prefix that a log collector put in front of every line (journald's "Nov 23 10:11:12 host
    python[481]: ", kubectl's "[pod/trainer-0/main] ", a logger's "[2025-03-04 10:11:12,345] "), read
    from a Python traceback or exception that does not start its line: the text before its header, a
    frame (also pytest's, or a py-spy dump's thread) or an exception's type. It counts when it is short
    (``PREFIX_MAX``), at least 2 lines and 4 in 5 of the head's lines start with it (digits aside),
    triage does not already read it as a process prefix, and it names no log level (a logger's record
    of a traceback is read as it is: its level and source are evidence; the frames below such a record
    still show a collector's prefix). As a pattern whose digit runs
    match any digits; None when there is none."""
    texts = [line for line in lines if line.strip()]
    tried = 0
    for line in texts:
        m = _TRACEBACK_AT_RE.search(line)
        if m is None or m.start() == 0 or not line[: m.start()].strip():
            continue
        tried += 1
        if tried > 16:
            return None
        head = line[: m.start()].rstrip(b" \t") + b" "
        rest = split_prefix(head.decode("utf-8", "replace") + "x")[1][:-1].encode()
        if not rest.strip():
            return None  # a process prefix triage reads itself
        if _LEVEL_RE.search(rest):
            continue  # a logger's record that runs into a traceback (its level counts): a frame may tell
        if len(rest) > PREFIX_MAX:
            continue  # a message that goes on into a traceback, not a tag
        keep = head[: len(head) - len(rest)]  # a process prefix in front of it stays: it names the process
        pattern = re.compile(b"(" + _shape(keep) + b")" + _shape(rest) + rb"?")
        tagged = sum(pattern.match(line) is not None for line in texts)
        if tagged >= 2 and 5 * tagged >= 4 * len(texts):
            return pattern
    return None


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


class _RowReader:
    """A binary reader that rewrites a log row by row (a row: the bytes between two newlines). A giant
    row (over ``ROW_CAP`` bytes with no newline yet) goes through in parts: its first part as a row's
    start, the rest untouched."""

    def __init__(self, fh: ByteReader) -> None:
        self.fh = fh
        self._rest = b""  # the unfinished last row of the previous read
        self._mid = False  # inside a giant row let through in parts

    def _rewrite(self, row: bytes) -> bytes:
        """What a row reads as, on its own (a reader that joins rows overrides _row and _part instead)."""
        raise NotImplementedError

    def _row(self, row: bytes, out: list[bytes]) -> None:
        """A complete row (without its newline): append what it reads as, with its newline."""
        out.append(self._rewrite(row) + b"\n")

    def _part(self, part: bytes, out: list[bytes]) -> None:
        """A part of a giant row (the first one unless ``_mid``), or the log's last row (no newline)."""
        if part:
            out.append(part if self._mid else self._rewrite(part))

    def read(self, size: int = -1) -> bytes:
        out: list[bytes] = []
        while not out:
            raw = self.fh.read(size)
            if not raw:
                self._part(self._rest, out)
                self._rest = b""
                return b"".join(out)
            rows = (self._rest + raw).split(b"\n")
            self._rest = rows.pop()
            for row in rows:
                self._row(row, out)
                self._mid = False
            if len(self._rest) > ROW_CAP:
                self._part(self._rest, out)
                self._rest, self._mid = b"", True
        return b"".join(out)


class Unwrapped(_RowReader):
    """A binary reader of a log hard-wrapped at ``width`` characters: every row of exactly that width is
    joined to the row after it. The joined line is numbered as its last row; its earlier rows read empty."""

    def __init__(self, fh: ByteReader, width: int) -> None:
        super().__init__(fh)
        self.width = width
        self._join: list[bytes] = []  # full-width rows waiting for the row that ends their line

    def _row(self, row: bytes, out: list[bytes]) -> None:
        if _width(row) == self.width and not self._mid:
            self._join.append(row.rstrip(b"\r"))
        else:
            out.append(self._flush() + row + b"\n")

    def _part(self, part: bytes, out: list[bytes]) -> None:
        if part:  # nothing follows to join it to
            out.append(self._flush() + part)
        elif self._join:  # the log ended with a newline after full-width rows
            out.append(self._flush()[1:] + b"\n")

    def _flush(self) -> bytes:
        """The waiting rows as one line's start, after as many empty lines as they had newlines."""
        joined = b"\n" * len(self._join) + b"".join(self._join)
        self._join.clear()
        return joined


class Unnumbered(_RowReader):
    """A binary reader of a log pasted with a line number in front of every line (``cat -n``, ``grep -n``,
    a log viewer's gutter): ``number`` and then ``sep`` are removed from the start of each row."""

    def __init__(self, fh: ByteReader, sep: bytes) -> None:
        super().__init__(fh)
        self.sep = sep

    def strip(self, row: bytes) -> bytes:
        """``row`` without its number and separator (unchanged when it has no number)."""
        m = _NUMBER_RE.match(row)
        if m is None:
            return row
        rest = row[m.end() :]
        return rest[len(self.sep) :] if rest.startswith(self.sep) else rest.lstrip(_SEP_CHARS)

    def _rewrite(self, row: bytes) -> bytes:
        return self.strip(row)


class Decolored(_RowReader):
    """A binary reader of a log whose colour codes lost their ESC byte in the copy ("[36m(pid=12)[0m ...",
    as a terminal or a web log view gives them): the codes are removed from every row."""

    def _rewrite(self, row: bytes) -> bytes:
        return _LOST_SGR_RE.sub(b"", row)


def _lost_colours(lines: list[bytes]) -> bool:
    """Whether the head holds colour codes without their ESC, a reset ("[0m") among them."""
    found = [m.group() for line in lines for m in _LOST_SGR_RE.finditer(line)]
    return len(found) >= 2 and b"[0m" in found


class Unprefixed(_RowReader):
    """A binary reader of a log with a collector's prefix in front of its lines: ``prefix`` (a pattern) is
    removed from the start of every row it matches, except its first group (a process prefix)."""

    def __init__(self, fh: ByteReader, prefix: re.Pattern[bytes]) -> None:
        super().__init__(fh)
        self.prefix = prefix

    def _rewrite(self, row: bytes) -> bytes:
        m = self.prefix.match(row)
        return row if m is None else row[: m.end(1)] + row[m.end() :]


def pasted_reader(fh: BinaryIO) -> ByteReader:
    """``fh`` itself, or a reader that undoes the log's paste forms: colour codes that lost their ESC, then
    line numbers in front of every line, or a hard wrap and an indentation; and a collector's prefix."""
    head = _head_lines(fh)
    src: ByteReader = fh
    if _lost_colours(head):  # the other forms are decided on the lines as they were shown
        src, head = Decolored(src), [_LOST_SGR_RE.sub(b"", line) for line in head]
    sep = _numbering_of(head)
    if sep is not None:  # numbered as shown; no wrap or indentation is looked for under the numbers
        unnumbered = Unnumbered(src, sep)
        src, head = unnumbered, [unnumbered.strip(line) for line in head]
    else:
        width, indent = _wrap_of(head), _indent_of(head)
        if width:
            src = Unwrapped(src, width)
            head = Unwrapped(io.BytesIO(b"\n".join(head)), width).read().split(b"\n")  # as lines again
        if indent:
            src, head = Dedented(src, indent), [line.removeprefix(indent) for line in head]
    # the lines may still carry a collector's prefix
    prefix = _collector_prefix(head)
    return src if prefix is None else Unprefixed(src, prefix)
