#!/usr/bin/env python3
"""Benchmark: the supervisor's live triage cost on an RL-shaped log written at 20k lines/s.

A writer process appends RL-shaped lines (``scripts/rl_log.py``) to a log at ``--rate`` lines per
second; this process runs the supervisor's real ``StepMonitor`` (tailer, progress parser, triage)
on it, polling like the supervisor does, for ``--seconds``. Measured in this process (thread CPU
time, the monitor runs on the main thread): CPU seconds per wall second of the triage feed path
(``GatedFeed.feed``, and for comparison the same lines through ``engine.feed`` directly) and of the
whole ``poll`` (tail + parse + triage). Target: triage feed below 25% of one core.

Usage: python scripts/bench_live_triage.py [--rate 20000] [--seconds 10]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from rl_log import rl_chunks  # noqa: E402

from console.events import EventBus  # noqa: E402
from console.runs.pipeline import StepMonitor  # noqa: E402
from console.triage.engine import TriageEngine  # noqa: E402

TICK_S = 0.05


def _writer(path: str, lines: list[bytes], rate: int, seconds: float) -> None:
    batch = max(1, int(rate * TICK_S))
    start = time.monotonic()
    with open(path, "ab", buffering=0) as fh:
        i = 0
        while i < len(lines) and time.monotonic() - start < seconds:
            due = int((time.monotonic() - start) * rate)
            if i < due:
                n = min(batch * 4, due - i, len(lines) - i)
                fh.write(b"".join(lines[i : i + n]))
                i += n
            else:
                time.sleep(TICK_S / 5)


class _Timed:
    """Wraps a feed function and adds up the thread CPU time spent in it."""

    def __init__(self, fn) -> None:  # noqa: ANN001
        self.fn = fn
        self.cpu = 0.0
        self.calls = 0

    def feed(self, lineno: int, text: str) -> list:
        t = time.thread_time()
        out = self.fn(lineno, text)
        self.cpu += time.thread_time() - t
        self.calls += 1
        return out


def run(mode: str, lines: list[bytes], rate: int, seconds: float, tmp: Path) -> dict[str, float]:
    log = tmp / f"{mode}.log"
    log.write_bytes(b"")
    mon = StepMonitor("train", log, "unknown", EventBus(), progress_only=True)
    if mode == "engine.feed":
        mon.triage = _Timed(mon.engine.feed)  # every line through the engine, as before the gate
    else:
        mon.triage = _Timed(mon.triage.feed)
    proc = mp.get_context("spawn").Process(target=_writer, args=(str(log), lines, rate, seconds))
    proc.start()
    t0, c0 = time.monotonic(), time.thread_time()
    while proc.is_alive():
        mon.poll()
        time.sleep(TICK_S)
    proc.join()
    while mon.poll():
        pass
    wall = time.monotonic() - t0
    cpu = time.thread_time() - c0
    gated = getattr(mon.triage.fn, "__self__", None)
    return {
        "wall": wall,
        "lines": mon.tailer.lineno,
        "feed_cpu": mon.triage.cpu,
        "poll_cpu": cpu,
        "calls": mon.triage.calls,
        "fed": getattr(gated, "fed", mon.triage.calls),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=20000, help="lines per second written (default %(default)s)")
    ap.add_argument("--seconds", type=float, default=10.0, help="how long to write (default %(default)s)")
    args = ap.parse_args()
    need = int(args.rate * args.seconds) + 1
    lines: list[bytes] = []
    for part in rl_chunks(need * 170, seed=2, failure="oom", fail_at=0.9):
        lines.extend(ln + b"\n" for ln in part.split(b"\n")[:-1])
        if len(lines) >= need:
            break
    lines = lines[:need]
    TriageEngine("unknown")  # load the catalog once, outside the measurement
    load0 = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_live_") as d:
        for mode in ("GatedFeed.feed", "engine.feed"):
            r = run(mode, lines, args.rate, args.seconds, Path(d))
            rows.append((mode, r))
    load1 = os.getloadavg()
    print(
        f"RL-shaped lines written at {args.rate:,}/s for {args.seconds:g} s; load average "
        f"{load0[0]:.2f} -> {load1[0]:.2f} on {os.cpu_count()} CPUs"
    )
    head = ("triage path", "lines", "lines/s", "fed to engine", "triage cpu/wall", "poll cpu/wall", "us/line")
    table = [head]
    for mode, r in rows:
        table.append(
            (
                mode,
                f"{r['lines']:,}",
                f"{r['lines'] / r['wall']:,.0f}",
                f"{r['fed']:,}",
                f"{100 * r['feed_cpu'] / r['wall']:.1f}% of a core",
                f"{100 * r['poll_cpu'] / r['wall']:.1f}%",
                f"{1e6 * r['feed_cpu'] / max(1, r['calls']):.2f}",
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for k, row in enumerate(table):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
        if k == 0:
            print("  ".join("-" * w for w in widths))
    print("target: triage feed path below 25% of one core at 20k lines/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
