"""Polling (what production does) against watchfiles (inotify) for following N growing logs.

A writer process appends timestamped lines to N files at --rate lines/s per file (0: the files stay
quiet, the common case of a run between log lines). The follower, in this process, reads them
through ``console.monitor.tailer.Tailer`` either
- ``poll``: every 0.2 s ``Tailer.poll()`` on each file, as the supervisor's tick does
  (``console/runs/supervisor.py`` TICK_S, ``Pipeline.tick`` -> ``StepMonitor.poll``), or
- ``watch/5ms`` and ``watch/50ms``: one ``watchfiles.watch`` over the folder (one watcher for all
  files) with ``step`` 5 ms (debounce 30 ms: the removed ``Tailer.follow``'s setting) or 50 ms
  (debounce 50 ms: watchfiles' default step), ``poll()`` on the files it reports changed.

Columns: CPU of the follower (user+system of this process, all threads, % of one core, while the
writer runs), write-to-seen latency p50/p99 in ms (CLOCK_MONOTONIC stamped by the writer, read by
the follower), lines seen/written.

watchfiles is no runtime dependency (this bench is why): ``pip install watchfiles`` to get its rows.

Usage: python scripts/bench_watch.py [--files 1,8,64] [--rate 20] [--seconds 4]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from console.monitor.tailer import Tailer

TICK_S = 0.2  # the supervisor's loop period

WRITER = r"""
import os, sys, time
paths, rate, seconds = sys.argv[3:], float(sys.argv[1]), float(sys.argv[2])
fds = [os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT) for p in paths]
end = time.monotonic() + seconds
if rate <= 0:
    time.sleep(seconds)
else:
    period = 1.0 / (rate * len(fds))
    nxt = time.monotonic(); i = 0
    while nxt < end:
        os.write(fds[i % len(fds)], b"t=%d step %d\n" % (time.monotonic_ns(), i))
        i += 1; nxt += period
        d = nxt - time.monotonic()
        if d > 0:
            time.sleep(d)
print(i if rate > 0 else 0, flush=True)
"""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _seen(lines: list, lat: list[float]) -> None:
    now = time.monotonic_ns()
    for ln in lines:
        if ln.text.startswith("t="):
            lat.append((now - int(ln.text[2:].split(" ", 1)[0])) / 1e6)


def follow_poll(tailers: dict[str, Tailer], stop: threading.Event, lat: list[float]) -> None:
    while not stop.is_set():
        for t in tailers.values():
            _seen(t.poll(), lat)
        stop.wait(TICK_S)


def follow_watch(
    folder: Path, tailers: dict[str, Tailer], stop: threading.Event, lat: list[float], step_ms: int
) -> None:
    import watchfiles

    debounce = 30 if step_ms < 30 else step_ms
    for changes in watchfiles.watch(
        folder,
        stop_event=stop,
        debounce=debounce,
        step=step_ms,
        rust_timeout=500,
        yield_on_timeout=True,
        recursive=False,
        raise_interrupt=False,
    ):
        for _change, path in changes:
            t = tailers.get(path)
            if t is not None:
                _seen(t.poll(), lat)


def one(mode: str, n: int, rate: float, seconds: float) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="rlc-watch-") as d:
        folder = Path(d)
        paths = [folder / f"{i:02d}-step.log" for i in range(n)]
        for p in paths:
            p.touch()
        tailers = {str(p): Tailer(p, emit_partial=False) for p in paths}
        lat: list[float] = []
        stop = threading.Event()
        if mode == "poll":
            th = threading.Thread(target=follow_poll, args=(tailers, stop, lat))
        else:
            step_ms = int(mode.split("/")[1].removesuffix("ms"))
            th = threading.Thread(target=follow_watch, args=(folder, tailers, stop, lat, step_ms))
        th.start()
        time.sleep(0.5)  # the watcher is set up
        c0, w0 = _cpu(), time.monotonic()
        out = subprocess.run(
            [sys.executable, "-c", WRITER, str(rate), str(seconds), *map(str, paths)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        cpu = (_cpu() - c0) / (time.monotonic() - w0) * 100
        written = int(out.strip() or 0)
        time.sleep(TICK_S + 0.3)  # the last lines are seen
        stop.set()
        th.join(5)
        for t in tailers.values():
            t.close()
    if lat:
        q = statistics.quantiles(lat, n=100) if len(lat) > 1 else [lat[0]] * 99
        p50, p99 = f"{q[49]:.1f}", f"{q[98]:.1f}"
    else:
        p50 = p99 = "-"
    return [mode, str(n), f"{rate:g}", f"{cpu:.2f}", p50, p99, f"{len(lat)}/{written}"]


def table(rows: list[list[str]], head: list[str]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = [" | ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *rows]]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", default="1,8,64")
    ap.add_argument("--rate", type=float, default=20.0, help="lines/s per file while writing")
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args()
    try:
        import watchfiles

        modes, version = ("poll", "watch/5ms", "watch/50ms"), f"watchfiles {watchfiles.__version__}"
    except ImportError:
        modes, version = ("poll",), "watchfiles not installed (poll rows only)"
    rows = []
    for n in (int(x) for x in args.files.split(",")):
        for rate in (0.0, args.rate):
            for mode in modes:
                rows.append(one(mode, n, rate, args.seconds))
                print(" ".join(rows[-1]), file=sys.stderr, flush=True)
    print(f"python {sys.version.split()[0]}, {version}, {os.cpu_count()} CPU(s), {args.seconds:g} s per row")
    print(table(rows, ["mode", "files", "lines/s/file", "CPU %", "p50 ms", "p99 ms", "seen/written"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
