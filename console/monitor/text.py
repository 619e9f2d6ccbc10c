"""Line cleaning shared by the tailer, the progress parsers and triage.

Logs of RL runs carry ANSI colours, tqdm carriage-return redraws, NUL bytes and invalid UTF-8.
``clean_line`` turns one physical line (without its trailing newline) into the text parsers see.
"""

from __future__ import annotations

import re

# CSI sequences (colours, cursor moves, erase-line), OSC sequences, and lone ESC + one char.
_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    if "\x1b" not in text:
        return text
    return _ANSI_RE.sub("", text)


def collapse_cr(text: str) -> str:
    """Collapse ``\\r`` redraws of one physical line to what a terminal would finally show.

    A terminal overwrites from column 0 on each ``\\r``; the last segment wins, except that when
    the last segment is shorter, the tail of the previous one stays visible. We keep the last
    non-empty segment, which is what tqdm and Ray progress bars intend.
    """
    if "\r" not in text:
        return text
    parts = [p for p in text.split("\r") if p.strip()]
    return parts[-1] if parts else ""


def decode(raw: bytes) -> str:
    """Decode bytes that may contain invalid UTF-8 and NULs; never raises."""
    text = raw.decode("utf-8", errors="replace")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text


def clean_line(raw: bytes | str) -> str:
    text = decode(raw) if isinstance(raw, bytes) else raw
    return strip_ansi(collapse_cr(text)).rstrip("\n")
