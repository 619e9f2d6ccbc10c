"""Post-mortem stall detection: the phase a finished log stopped in, when nothing failed or completed.

Read once, after the scan, from the log's last lines (``read_tail``), and only for a finished log
(``scan_paths(final=True)``: the CLI, the final triage of a step that ended): a log still being written
is never called a hang here (the live supervisor has its own no-progress timeout). The phases and their
start/done markers are data: ``console/catalog/stall.toml`` (its header says how they are read).
"""

from __future__ import annotations

import re
from functools import cache
from typing import BinaryIO

from console.catalog import CatalogError
from console.catalog.schema import StallCatalog, StallPhase, load_checked
from console.monitor.text import clean_line
from console.redact import redact_text
from console.triage.finding import Finding

CUT_NOTE = "also consistent with: the log was cut while the run was still going"


@cache
def catalog() -> tuple[int, re.Pattern[str], re.Pattern[str], tuple[StallPhase, ...]]:
    """(tail bytes, skip regex, ended regex, phases) of stall.toml (each phase's regexes compile)."""
    data = load_checked("stall", StallCatalog)
    for p in data["phase"]:
        try:
            re.compile(f"{p.active}|{p.start}|{p.done}")
        except re.error as exc:
            raise CatalogError(f"stall.toml: phase {p.id}: bad regex: {exc}") from None
    return data["tail_bytes"], re.compile(data["skip"]), re.compile(data["ended"]), data["phase"]


def read_tail(fh: BinaryIO, nlines: int) -> list[tuple[int, str]]:
    """The last lines of an open log of ``nlines`` lines, cleaned, numbered as the scan numbers them
    (none from a pipe: its lines are gone)."""
    if not fh.seekable():
        return []
    size = fh.seek(0, 2)
    start = fh.seek(max(0, size - catalog()[0]))
    lines = [clean_line(raw) for raw in fh.read().split(b"\n")]
    if lines and not lines[-1]:
        lines.pop()
    if start and lines:
        lines.pop(0)  # begun before the window
    return list(enumerate(lines, nlines - len(lines) + 1))


def _state(phase: StallPhase, text: str, bars: dict[str, tuple[str, int]]) -> str | None:
    """ "done", "start", "active" or None: what ``text`` says of ``phase``."""
    if re.search(phase.done, text):
        return "done"
    if re.search(phase.start, text):
        return "start"
    m = re.search(phase.active, text)
    if m is None:
        return None
    if "n" not in m.groupdict():
        return "active"
    bar, total = (m.group("label").strip(), int(m.group("n"))), int(m.group("total"))
    still = bar[1] == 0 or bars.get(phase.id) == bar  # not moving: nothing done, or the same n redrawn
    bars[phase.id] = bar
    return "active" if bar[1] < total and still else "done"


def stalled(tail: list[tuple[int, str]]) -> tuple[StallPhase, list[tuple[int, str]]] | None:
    """The phase the log ends in (and its lines, oldest first), or None."""
    _, skip, ended, phases = catalog()
    lines = [(n, t) for n, t in tail if not skip.search(t)]
    open_: dict[str, list[int]] = {}  # phase id -> indices (into lines) of its lines since it opened
    closed: set[str] = set()
    bars: dict[str, tuple[str, int]] = {}
    for i, (_, text) in enumerate(lines):
        if ended.search(text):
            closed.update(open_)
            open_.clear()
        for p in phases:
            state = _state(p, text, bars)
            if state == "done":
                open_.pop(p.id, None)
                closed.add(p.id)
            elif state == "start" or (state == "active" and p.id not in closed):
                open_.setdefault(p.id, []).append(i)
                closed.discard(p.id)
    found = [
        (ix[-1], p)
        for p in phases
        if (ix := open_.get(p.id)) and (not p.within or ix[-1] >= len(lines) - p.within)
    ]
    if not found:
        return None
    phase = max(found, key=lambda x: x[0])[1]
    return phase, [lines[i] for i in open_[phase.id][-5:]]


def stall_finding(tail: list[tuple[int, str]], file: str | None, also: list[str]) -> Finding | None:
    """The ``hang`` finding of a log that ends inside a stall phase, or None."""
    hit = stalled(tail)
    if hit is None:
        return None
    phase, lines = hit
    line, text = lines[-1]
    return Finding(
        "hang",
        "Fail",
        line,
        redact_text(f"the log ends inside {phase.title} ({CUT_NOTE}): {' '.join(text.split())}"[:400]),
        f"stall:{phase.id}",
        file=file,
        advice=phase.advice,
        confidence=phase.confidence,
        lines=[n for n, _ in lines],
        also=also,
    )
