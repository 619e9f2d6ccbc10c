"""Post-mortem triage of whole log files.

``scan_paths`` feeds the engine through ``console.triage.fastscan`` (one Aho-Corasick pass per chunk
of raw bytes, only the lines that can change the engine decoded, cleaned and fed), which ends in
the same engine state as feeding every line (``every_line=True``, the line-by-line reference the
differential test compares against). Lines are numbered like a line-by-line feed: physical lines,
1-based per file; a giant line is classified on its first 64 KiB.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from console.errors import ConsoleError
from console.triage.engine import TriageEngine
from console.triage.fastscan import (
    CHUNK,
    LINE_CAP,
    ByteReader,
    Finder,
    LineGate,
    line_text,
    make_finder,
    scan_file,
)
from console.triage.model import TriageResult
from console.triage.paste import pasted_reader
from console.triage.rules import Catalog, default_catalog
from console.triage.stall import read_tail

__all__ = [
    "CHUNK",
    "LINE_CAP",
    "Finder",
    "detect_framework",
    "feed_every_line",
    "make_finder",
    "prefilter_literals",
    "scan_paths",
    "triage_files",
]


def prefilter_literals(cat: Catalog | None = None) -> list[str]:
    """Every literal the engine looks for (rules, markers, traceback/exception structure, repeat counts)."""
    return sorted(TriageEngine("unknown", catalog=cat or default_catalog()).literals)


def detect_framework(head: bytes, cat: Catalog) -> str:
    """The framework whose evidence literals occur in ``head`` (demo first), else "unknown"."""
    for fw in ("demo", "verl", "nemo-rl"):
        if any(lit.encode() in head for lit in cat.frameworks.get(fw, ())):
            return fw
    return "unknown"


def _open(path: Path) -> BinaryIO:
    try:
        fh = open(path, "rb")  # noqa: SIM115
    except IsADirectoryError:
        raise ConsoleError(f"{path}: is a directory, not a log file") from None
    except OSError as exc:
        raise ConsoleError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return fh


def feed_every_line(engine: TriageEngine, fh: ByteReader, chunk_size: int = CHUNK) -> int:
    """The line-by-line reference: every physical line through ``engine.feed``. Returns the line count."""
    lineno = 0
    carry = b""
    while True:
        data = fh.read(chunk_size)
        if not data:
            break
        lines = (carry + data).split(b"\n")
        carry = lines.pop()
        for raw in lines:
            lineno += 1
            engine.feed(lineno, line_text(raw))
        if len(carry) > 2 * LINE_CAP:  # a giant line: only its head is ever read
            carry = carry[: 2 * LINE_CAP]
    if carry:
        lineno += 1
        engine.feed(lineno, line_text(carry))
    return lineno


def scan_paths(
    paths: Iterable[str | Path],
    framework: str | None = None,
    catalog: Catalog | None = None,
    every_line: bool = False,
    final: bool = False,
) -> TriageEngine:
    """Feed one or more logs (in order) through a fresh engine and return it. ``final``: the logs are
    finished (the run ended): the last one's tail is kept for stall detection (``engine.tail``).

    Raises ``ConsoleError`` (exit 2) with one clear line for a missing or unreadable file.
    """
    cat = catalog or default_catalog()
    files = [Path(p) for p in paths]
    for p in files:  # check them all before reading any
        _open(p).close()
    engine = TriageEngine(framework or "unknown", catalog=cat)
    gate = None if every_line else LineGate(engine)
    finder = None if gate is None else gate.hit_finder()
    for p in files:
        engine.source = str(p) if len(files) > 1 else None
        with _open(p) as fh:
            try:
                src = pasted_reader(fh)
                if gate is None:
                    lines = feed_every_line(engine, src)
                else:
                    lines = scan_file(engine, src, gate, finder).lineno - 1
                if final and p is files[-1]:
                    engine.tail = read_tail(fh, lines)
            except OSError as exc:
                raise ConsoleError(f"{p}: read error: {exc.strerror or exc}") from None
    return engine


def triage_files(
    paths: Iterable[str | Path],
    framework: str | None = None,
    exit_code: int | None = None,
    catalog: Catalog | None = None,
    every_line: bool = False,
) -> TriageResult:
    """Post-mortem triage of one or more finished logs (fed in order) -> the triage JSON of DESIGN.md."""
    return scan_paths(paths, framework, catalog, every_line, final=True).result(exit_code)
