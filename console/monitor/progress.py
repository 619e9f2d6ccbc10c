"""``make_parser(framework)``: the progress parser for a framework's log lines (see ``text.py``), each
``feed(text, now=None)`` returning ``progress``/``metrics``/``phase``/``complete`` events. "demo" uses
the NeMo-RL format; "unknown" tries both and sticks to the first that matches.
"""

from __future__ import annotations

import time

from console.errors import SpecError
from console.events import Event
from console.monitor.progress_base import ProgressParser
from console.monitor.progress_nemo_rl import NemoRlProgressParser
from console.monitor.progress_verl import VerlProgressParser

FRAMEWORKS = ("nemo-rl", "verl", "demo", "unknown")


class AutoProgressParser:
    """Feeds both parsers until one reports progress, then only that one."""

    source = "unknown"

    def __init__(self) -> None:
        self._candidates: list[ProgressParser] = [NemoRlProgressParser(), VerlProgressParser()]
        self.chosen: ProgressParser | None = None

    def feed(self, text: str, now: float | None = None) -> list[Event]:
        now = time.time() if now is None else now
        if self.chosen is not None:
            return self.chosen.feed(text, now)
        out: list[Event] = []
        for p in self._candidates:
            evs = p.feed(text, now)
            if any(e.type in ("progress", "complete") for e in evs) and self.chosen is None:
                self.chosen = p
                self.source = p.source
                return evs
            out += evs
        return out


def make_parser(framework: str) -> ProgressParser:
    if framework == "nemo-rl":
        return NemoRlProgressParser()
    if framework == "demo":
        return NemoRlProgressParser(source="demo")
    if framework == "verl":
        return VerlProgressParser()
    if framework == "unknown":
        return AutoProgressParser()
    raise SpecError(f"unknown framework {framework!r} (expected one of: {', '.join(FRAMEWORKS)})")
