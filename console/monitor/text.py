"""Line cleaning (ANSI colours, tqdm ``\\r`` redraws, NUL bytes, invalid UTF-8) for the tailer, the
progress parsers and triage: ``clean_line`` is one physical line as the parsers see it."""

from __future__ import annotations

import re

# CSI sequences (colours, cursor moves, erase-line), OSC sequences, and lone ESC + one char.
_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    if "\x1b" not in text:
        return text
    return _ANSI_RE.sub("", text)


def collapse_cr(text: str) -> str:
    """What a terminal finally shows of a physical line with ``\\r`` redraws: its last non-empty segment
    (what tqdm and Ray progress bars intend)."""
    if "\r" not in text:
        return text
    parts = [p for p in text.split("\r") if p.strip()]
    return parts[-1] if parts else ""


def decode(raw: bytes) -> str:
    """Decode bytes that may contain invalid UTF-8 and NULs; never raises."""
    return raw.decode("utf-8", errors="replace").replace("\x00", "")


def clean_line(raw: bytes | str) -> str:
    text = decode(raw) if isinstance(raw, bytes) else raw
    return strip_ansi(collapse_cr(text)).rstrip("\n")


# A tqdm-style bar: "[desc: ] NN%|bar| n/total [elapsed<remaining, rate[, postfix]]" or "n it [..]".
_BAR_RE = re.compile(
    r"(?:[^\r|]*?:\s*)?\d{1,3}%\|[^|]*\|\s*[\d.]+[kMG]?/[\d.?]+[kMG]?\s*(?:\[[^\]]*\])?"
    r"|(?:[^\r|]*?:\s*)?\d+(?:\.\d+)?[kMG]?it\s*\[[^\]]*\]"
)
# Something that looks like a progress state even if not in tqdm's format (overwritten redraws).
_BARLIKE_RE = re.compile(r"\d+(?:\.\d+)?%|\d+/\d+|it/s|s/it")
# Ray's line prefix, the one pattern the tailer, the progress parsers and triage use: a worker's
# "(pid=12)", "(TaskRunner pid=12, ip=10.0.0.1)", "(MegatronPolicyWorker[rank=0] pid=3)", or a Ray
# system process's "(raylet)", "(gcs_server, ip=10.0.0.1)", "(autoscaler)".
RAY_PREFIX = r"\((?:[^()]{0,160}?\bpid=[^)]{0,80}|(?:raylet|gcs_server|autoscaler|monitor|dashboard\w*)(?:, ip=[^)]{0,60})?)\)"
RAY_PREFIX_RE = re.compile(RAY_PREFIX + r"\s?")  # match() at the line start; \s?: the space after it
_RAY_PREFIX_ONLY_RE = re.compile(rf"^\s*{RAY_PREFIX}\s*$")  # a \r segment holding the prefix alone


def split_bar(segment: str) -> tuple[str, str, str]:
    """One ``\\r`` segment -> (text before a tqdm-style bar, the bar, text after it); without a bar the
    whole segment is the first item."""
    m = _BAR_RE.search(segment)
    if m is None:
        return segment, "", ""
    return segment[: m.start()], m.group(0).strip(), segment[m.end() :]


def split_cr_segments(text: str) -> list[str]:
    """The lines a reader needs of one physical line with ``\\r`` redraws (ANSI already stripped): the
    messages that shared it with a progress bar, in order, then the bar's final state. Overwritten bar
    states are dropped; a message printed right after a bar (``...it/s]step:1 - loss:0.5``) is kept."""
    if "\r" not in text:
        return [text]
    segments = text.split("\r")
    out: list[str] = []
    last_bar = ""
    prefix = ""
    for seg in segments:
        if not seg.strip():
            continue
        if _RAY_PREFIX_ONLY_RE.match(seg):
            prefix = seg.strip() + " "
            continue
        before, bar, after = split_bar(seg)
        if bar:
            last_bar = prefix + (before + bar if before.strip() else bar)
            if after.strip():
                out.append(prefix + after.strip())
            continue
        if _BARLIKE_RE.search(seg) and len(seg) < 400:
            # a non-tqdm progress state: only the last one stays on a terminal, after the messages
            last_bar = prefix + seg.strip()
            continue
        out.append(prefix + seg.rstrip())
    if last_bar:
        out.append(last_bar)
    return out or [""]


def clean_segments(raw: bytes | str) -> list[str]:
    """Decode, strip ANSI and split ``\\r`` redraws of one physical line (see split_cr_segments)."""
    text = decode(raw) if isinstance(raw, bytes) else raw
    return split_cr_segments(strip_ansi(text).rstrip("\n").rstrip("\r"))
