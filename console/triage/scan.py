"""Fast post-mortem triage of whole log files.

Whole chunks are prefiltered with one combined search for every rule/marker literal (Aho-Corasick
through ``ahocorasick_rs`` when installed, else one combined regex); only the lines that contain a
literal, plus the lines inside an open traceback, reach the per-line engine. Lines are numbered by
counting newlines between hits, so the engine sees the same numbers as a line-by-line feed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from console.errors import ConsoleError
from console.monitor.text import clean_line
from console.triage.engine import STRUCTURE_LITERALS, TriageEngine
from console.triage.rules import Catalog, default_catalog

CHUNK = 8 << 20
LINE_CAP = 64 << 10  # a giant line is classified on its first 64 KiB
DETECT_BYTES = 4 << 20

Finder = Callable[[bytes], list[int]]


def prefilter_literals(cat: Catalog | None = None) -> list[str]:
    cat = cat or default_catalog()
    return sorted(set(cat.literals()) | set(STRUCTURE_LITERALS))


def make_finder(literals: Iterable[str]) -> tuple[Finder, str]:
    """A function giving the start offsets of literal hits in a bytes chunk, and its name."""
    pats = [lit.encode() for lit in literals]
    try:
        import ahocorasick_rs  # optional accelerator (Rust Aho-Corasick)

        ac = ahocorasick_rs.BytesAhoCorasick(pats)

        def find_ac(chunk: bytes) -> list[int]:
            return [start for _, start, _ in ac.find_matches_as_indexes(chunk)]

        return find_ac, "aho-corasick"
    except ImportError:
        rx = re.compile(b"|".join(re.escape(p) for p in sorted(pats, key=len, reverse=True)))

        def find_re(chunk: bytes) -> list[int]:
            return [m.start() for m in rx.finditer(chunk)]

        return find_re, "regex"


class _FileScanner:
    def __init__(self, engine: TriageEngine, finder: Finder) -> None:
        self.engine = engine
        self.finder = finder
        self.lineno = 1  # number of the line starting at the current chunk's offset 0

    def _feed(self, raw: bytes) -> None:
        if len(raw) > LINE_CAP:
            raw = raw[:LINE_CAP]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        self.engine.feed(self.lineno, clean_line(raw))

    def chunk(self, buf: bytes) -> None:
        """Process ``buf``, which ends at a line boundary (or is a piece of a giant line)."""
        hits = self.finder(buf)
        pos = 0  # start of the next unprocessed line
        n = len(buf)
        hit_i = 0
        engine = self.engine
        while pos < n:
            if not engine.wants_more:
                # jump to the next line holding a hit
                while hit_i < len(hits) and hits[hit_i] < pos:
                    hit_i += 1
                if hit_i >= len(hits):
                    self.lineno += buf.count(b"\n", pos, n)
                    return
                start = buf.rfind(b"\n", pos, hits[hit_i]) + 1
                if start > pos:
                    self.lineno += buf.count(b"\n", pos, start)
                    pos = max(pos, start)
            end = buf.find(b"\n", pos)
            if end < 0:
                self._feed(buf[pos:])
                return
            self._feed(buf[pos:end])
            self.lineno += 1
            pos = end + 1


def detect_framework(head: bytes, cat: Catalog) -> str:
    for fw in ("demo", "verl", "nemo-rl"):
        if any(lit.encode() in head for lit in cat.frameworks.get(fw, ())):
            return fw
    return "unknown"


def _open(path: Path):  # noqa: ANN202
    try:
        fh = open(path, "rb")  # noqa: SIM115
    except IsADirectoryError:
        raise ConsoleError(f"{path}: is a directory, not a log file") from None
    except OSError as exc:
        raise ConsoleError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return fh


def scan_file(engine: TriageEngine, path: Path, finder: Finder) -> None:
    scanner = _FileScanner(engine, finder)
    with _open(path) as fh:
        carry = b""
        while True:
            try:
                data = fh.read(CHUNK)
            except OSError as exc:
                raise ConsoleError(f"{path}: read error: {exc.strerror or exc}") from None
            if not data:
                break
            buf = carry + data if carry else data
            cut = buf.rfind(b"\n")
            if cut < 0:
                if len(buf) >= CHUNK:  # a giant line: classify this piece, do not accumulate
                    scanner.chunk(buf)
                    carry = b""
                else:
                    carry = buf
                continue
            scanner.chunk(buf[: cut + 1])
            carry = buf[cut + 1:]
        if carry:
            scanner.chunk(carry)


def scan_paths(paths: Iterable[str | Path], framework: str | None = None,
               catalog: Catalog | None = None) -> TriageEngine:
    """Feed one or more logs (in order) through a fresh engine and return it.

    Raises ``ConsoleError`` (exit 2) with one clear line for a missing or unreadable file.
    """
    cat = catalog or default_catalog()
    paths = [Path(p) for p in paths]
    for p in paths:  # check them all before reading any
        _open(p).close()
    engine = TriageEngine(framework or "unknown", catalog=cat)
    if engine.framework == "unknown":
        for p in paths:
            with _open(p) as fh:
                fw = detect_framework(fh.read(DETECT_BYTES), cat)
            if fw != "unknown":
                engine.set_framework(fw)
                break
    finder, _ = make_finder(prefilter_literals(cat))  # framework evidence was read from the head above
    for p in paths:
        engine.source = str(p) if len(paths) > 1 else None
        scan_file(engine, p, finder)
    return engine


def triage_files(paths: Iterable[str | Path], framework: str | None = None,
                 exit_code: int | None = None, catalog: Catalog | None = None) -> dict[str, Any]:
    """Post-mortem triage of one or more logs (fed in order) -> the triage JSON of DESIGN.md."""
    return scan_paths(paths, framework, catalog).result(exit_code)

