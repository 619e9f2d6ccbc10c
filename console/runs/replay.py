"""Replay a recorded log as a live run: ``rl-console replay LOG [--speed X]``.

``start_replay`` creates a one-step run whose step, ``python -m console.runs.replay LOG``, writes
the log's lines at their original pace (the gaps between leading timestamps, else a steady rate);
the console follows it like any other run.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from console.errors import SpecError
from console.runs.launch import start_run
from console.spec import FRAMEWORKS, RunSpec

STEADY_LINES_PER_S = 40.0
MAX_GAP_S = 5.0  # a recorded pause longer than this is replayed as this (before --speed)

_TS_PATTERNS = [
    # 2026-11-21 22:36:00,123 / 2026-11-21T22:36:00.123Z / [2026-11-21 22:36:00]
    (re.compile(r"^\[?(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:[.,](\d{1,6}))?"), True),
    # 22:36:00.123 / [22:36:00]
    (re.compile(r"^\[?(\d{2}:\d{2}:\d{2})(?:[.,](\d{1,6}))?\b"), False),
]


def line_time(line: str) -> float | None:
    """Seconds (of the day or since the epoch) of a leading timestamp, or None."""
    for rx, dated in _TS_PATTERNS:
        m = rx.match(line)
        if not m:
            continue
        try:
            if dated:
                base = datetime.strptime(f"{m.group(1)} {m.group(2)}", "%Y-%m-%d %H:%M:%S").timestamp()
                frac = m.group(3)
            else:
                h, mi, s = (int(x) for x in m.group(1).split(":"))
                if h > 23 or mi > 59 or s > 60:
                    continue
                base = float(h * 3600 + mi * 60 + s)
                frac = m.group(2)
        except ValueError:
            continue
        return base + (float(f"0.{frac}") if frac else 0.0)
    return None


def pacing(lines: list[bytes], speed: float) -> list[float]:
    """Delay before each line: timestamp gaps when at least half the lines carry one, else steady."""
    times = [line_time(raw[:40].decode("utf-8", "replace")) for raw in lines]
    stamped = sum(t is not None for t in times)
    steady = 1.0 / (STEADY_LINES_PER_S * speed)
    if not lines or stamped * 2 < len(lines):
        return [0.0] + [steady] * (len(lines) - 1)
    delays: list[float] = []
    prev: float | None = None
    for t in times:
        # a negative gap: the clock of day wrapped past midnight, or out-of-order lines
        delays.append(0.0 if t is None or prev is None else min(max(t - prev, 0.0), MAX_GAP_S) / speed)
        prev = t if t is not None else prev
    return delays


def emit(log: Path, speed: float, out: BinaryIO | None = None) -> int:
    out = out or sys.stdout.buffer
    lines = log.read_bytes().splitlines(keepends=True)
    for delay, raw in zip(pacing(lines, speed), lines, strict=True):
        if delay > 0:
            time.sleep(delay)
        out.write(raw)
        out.flush()
    return 0


def _not_a_text_log(log: Path) -> str | None:
    """Why ``log`` cannot be replayed (empty, binary), or None."""
    try:
        with open(log, "rb") as fh:
            head = fh.read(64 << 10)
    except OSError as exc:
        return exc.strerror or str(exc)
    if not head.strip():
        return "the file is empty"
    if b"\0" in head:
        return "not a text log (binary data)"
    text = head.decode("utf-8", errors="replace")
    if text.count("\ufffd") > max(8, len(text) // 100):
        return "not a text log (not UTF-8 text)"
    return None


def replay_plan(log: Path, speed: float, framework: str) -> dict[str, Any]:
    return {
        "steps": [
            {
                "name": "replay",
                "title": f"Replay of {log.name}",
                "argv": [
                    sys.executable,
                    "-m",
                    "console.runs.replay",
                    str(log),
                    "--speed",
                    repr(float(speed)),
                ],
                "env": {},
                "unset": [],
                "cwd": "{run_dir}",
                "gpus": 0,
                "kind": "train",
                "deliverable": "framework_run",
                "proves": f"replayed log {log}",
                "criteria": [],
                "on_failure": "stop",
                "total_steps": None,
            }
        ]
    }


def start_replay(
    log: Path, speed: float = 1.0, framework: str | None = None, runs_dir: str | Path = "runs"
) -> Path:
    """Start a run that re-emits ``log``; returns its folder."""
    log = Path(log).expanduser()
    if not log.is_file():
        raise SpecError(f"replay: {log}: no such file")
    problem = _not_a_text_log(log)
    if problem:
        raise SpecError(f"replay: {log}: {problem}")
    if speed <= 0:
        raise SpecError("replay: --speed must be > 0")
    framework = framework or "unknown"
    if framework not in (*FRAMEWORKS, "unknown"):
        raise SpecError(
            f"replay: --framework {framework!r}: expected one of {', '.join(FRAMEWORKS)}, unknown"
        )
    spec = RunSpec(
        framework=framework,
        levels=[0],
        variants=["replay"],
        runs_dir=str(runs_dir),
        extra={"replay_of": str(log.resolve()), "speed": speed},
    )
    return start_run(spec, plan=replay_plan(log.resolve(), speed, framework))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="console.runs.replay", description="re-emit a recorded log")
    p.add_argument("log", type=Path)
    p.add_argument("--speed", type=float, default=1.0)
    args = p.parse_args(argv)
    if args.speed <= 0:
        p.error("--speed must be > 0")
    return emit(args.log, args.speed)


if __name__ == "__main__":
    sys.exit(main())
