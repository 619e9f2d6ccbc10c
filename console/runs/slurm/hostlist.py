"""Slurm hostlists: ``rack[1-2]-node[01-02],login`` -> the node names.

``expand(text)`` asks ``scontrol show hostnames`` when it is on PATH (the authority: it knows every
form the installed Slurm accepts) and falls back to :func:`parse`, a parser of the documented forms:
comma-separated items at bracket depth 0, each item a product of bracket groups
(``a[1,3-5]b[01-02]``), ranges keeping the zero padding of their lower bound (``[08-11]``).
"""

from __future__ import annotations

import shutil
import subprocess
from functools import lru_cache

from console.errors import ConsoleError

EMPTY = ("", "(null)", "None assigned", "None")
MAX_HOSTS = 100_000  # a range this big is a typo, not a cluster


class HostlistError(ConsoleError):
    """A hostlist that is not well formed."""


def _split_top(text: str, strict: bool = True) -> list[str]:
    """Split at commas outside brackets; ``strict``: raise on brackets that do not pair up."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if strict and depth > 1:
            raise HostlistError(f"hostlist {text!r}: nested '['")
        if strict and depth < 0:
            raise HostlistError(f"hostlist {text!r}: ']' without '['")
        if ch == "," and depth <= 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if strict and depth:
        raise HostlistError(f"hostlist {text!r}: unclosed '['")
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _range_values(body: str, whole: str) -> list[str]:
    """``1,3-5`` -> ["1", "3", "4", "5"]; ``08-10`` -> ["08", "09", "10"] (width of the lower bound)."""
    out: list[str] = []
    for rng in body.split(","):
        rng = rng.strip()
        lo, dash, hi = rng.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise HostlistError(f"hostlist {whole!r}: bad range {rng!r}")
        if not dash:
            out.append(lo)
            continue
        a, b = int(lo), int(hi)
        if b < a:
            raise HostlistError(f"hostlist {whole!r}: range {rng!r} goes backwards")
        if b - a >= MAX_HOSTS:
            raise HostlistError(f"hostlist {whole!r}: range {rng!r} is too large")
        width = len(lo) if lo.startswith("0") else 0
        out.extend(f"{i:0{width}d}" for i in range(a, b + 1))
    return out


def _expand_item(item: str, whole: str) -> list[str]:
    """``rack[1-2]-node[01-02]`` -> the product of its groups, in Slurm's order (leftmost slowest)."""
    names = [""]
    i = 0
    while i < len(item):
        start = item.find("[", i)
        if start < 0:
            names = [n + item[i:] for n in names]
            break
        end = item.index("]", start)
        prefix = item[i:start]
        values = _range_values(item[start + 1 : end], whole)
        names = [n + prefix + v for n in names for v in values]
        if len(names) > MAX_HOSTS:
            raise HostlistError(f"hostlist {whole!r} names too many hosts")
        i = end + 1
    return names


def parse(text: str) -> list[str]:
    """Expand a hostlist without Slurm (raises :class:`HostlistError` on a malformed one)."""
    text = text.strip()
    if text in EMPTY:
        return []
    out: list[str] = []
    for item in _split_top(text):
        out.extend(_expand_item(item, text))
    return out


_scontrol_broken = False  # set after the first failure: without a usable slurm.conf it can take a minute


@lru_cache(maxsize=256)
def _scontrol_hostnames(text: str) -> tuple[str, ...] | None:
    global _scontrol_broken
    if _scontrol_broken or shutil.which("scontrol") is None:
        return None
    try:
        proc = subprocess.run(
            ["scontrol", "show", "hostnames", text],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        _scontrol_broken = True
        return None
    if proc.returncode != 0 or not proc.stdout.strip():
        if "fatal" in proc.stderr or "configuration" in proc.stderr:
            _scontrol_broken = True
        return None
    return tuple(line.strip() for line in proc.stdout.splitlines() if line.strip())


def expand(text: str, use_scontrol: bool = True) -> list[str]:
    """The node names of ``text``: ``scontrol show hostnames`` when available, else :func:`parse`.
    A malformed list that neither understands comes back as its comma-separated items."""
    text = (text or "").strip()
    if text in EMPTY:
        return []
    if use_scontrol and ("[" in text):
        names = _scontrol_hostnames(text)
        if names:
            return list(names)
    try:
        return parse(text)
    except HostlistError:
        return _split_top(text, strict=False)
