"""Benchmarks of the live monitor, each printed as a table with its anchor measured in the same run.

1. latency: a real writer process appends NeMo-RL step banners at --rate lines/s; the Tailer
   (polled every 0.2 s, the supervisor's tick) -> progress parser -> EventBus (events.jsonl) chain
   is timed from write to append.
   Anchor: a bare 1 ms readline() polling loop on the same kind of file.
2. rss: peak RSS of a process following a --gb GB log (Tailer + parser), against a process that
   only iterates the file's lines. The log is generated in a temp dir and deleted afterwards.
3. nvml: cost of GpuSampler.sample() / HostSampler.sample() per second at 1 Hz. Anchor: one
   raw pynvml.nvmlInit() attempt. (Without a driver this measures the no-driver path.)
4. parse: CPU time per line of the progress parsers (catalog/progress.toml patterns) on the demo
   sample logs' lines, 200,000 lines per framework. Anchor: clean_segments() of the same lines
   (what the tailer spends on each line before the parser sees it).

Usage: python scripts/bench_monitor.py [--only latency,rss,nvml,parse] [--rate 10000] [--seconds 5] [--gb 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from console.events import EventBus  # noqa: E402
from console.monitor.gpu import GpuSampler  # noqa: E402
from console.monitor.host import HostSampler  # noqa: E402
from console.monitor.progress import make_parser  # noqa: E402
from console.monitor.tailer import Tailer  # noqa: E402

WRITER = r"""
import sys, time
path, rate, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
batch = max(1, rate // 1000)          # write every millisecond
n = 0
end = time.monotonic() + seconds
with open(path, "a", buffering=1 << 16) as fh:
    nxt = time.monotonic()
    while time.monotonic() < end:
        t = time.time()
        fh.write("".join(f"==== Step {n + i + 1}/100000000 ==== t={t:.6f}\n" for i in range(batch)))
        fh.flush()
        n += batch
        nxt += batch / rate
        d = nxt - time.monotonic()
        if d > 0:
            time.sleep(d)
print(n)
"""


def _pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def _table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def bench_latency(rate: int, seconds: float) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="rlc-bench-"))
    try:
        # --- the real chain
        log = tmp / "run.log"
        log.touch()
        bus = EventBus(tmp / "events.jsonl")
        parser = make_parser("nemo-rl")
        lat: list[float] = []

        def on_event(e) -> None:  # noqa: ANN001
            pass

        bus.subscribe(on_event)
        stop = threading.Event()
        tailer = Tailer(log)

        def follow() -> None:
            while not stop.is_set():
                for ln in tailer.poll():
                    for ev in parser.feed(ln.text):
                        bus.publish(ev)
                        i = ln.text.rfind("t=")
                        if i >= 0 and ev.type == "progress":
                            lat.append(time.time() - float(ln.text[i + 2 :]))
                if tailer.caught_up:
                    stop.wait(0.2)

        th = threading.Thread(target=follow)
        th.start()
        time.sleep(0.3)
        w = subprocess.run(
            [sys.executable, "-c", WRITER, str(log), str(rate), str(seconds)],
            capture_output=True,
            text=True,
            check=True,
        )
        written = int(w.stdout.strip())
        deadline = time.monotonic() + 10
        while len(lat) < written and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        th.join(5)
        bus.close()

        # --- anchor: bare readline polling at 1 ms
        log2 = tmp / "anchor.log"
        log2.touch()
        lat2: list[float] = []
        stop2 = threading.Event()

        def bare() -> None:
            with open(log2) as fh:
                buf = ""
                while not stop2.is_set():
                    chunk = fh.readline()
                    if not chunk:
                        time.sleep(0.001)
                        continue
                    buf += chunk
                    if buf.endswith("\n"):
                        i = buf.rfind("t=")
                        lat2.append(time.time() - float(buf[i + 2 :]))
                        buf = ""

        th2 = threading.Thread(target=bare)
        th2.start()
        w2 = subprocess.run(
            [sys.executable, "-c", WRITER, str(log2), str(rate), str(seconds)],
            capture_output=True,
            text=True,
            check=True,
        )
        written2 = int(w2.stdout.strip())
        deadline = time.monotonic() + 10
        while len(lat2) < written2 and time.monotonic() < deadline:
            time.sleep(0.05)
        stop2.set()
        th2.join(5)

        rows = [
            [
                "Tailer.poll/0.2s->parser->events.jsonl",
                f"{written / seconds:,.0f}",
                f"{len(lat):,}/{written:,}",
                f"{_pct(lat, 50) * 1000:.1f}",
                f"{_pct(lat, 99) * 1000:.1f}",
                f"{max(lat, default=0) * 1000:.1f}",
            ],
            [
                "anchor: readline poll 1 ms, no parse",
                f"{written2 / seconds:,.0f}",
                f"{len(lat2):,}/{written2:,}",
                f"{_pct(lat2, 50) * 1000:.1f}",
                f"{_pct(lat2, 99) * 1000:.1f}",
                f"{max(lat2, default=0) * 1000:.1f}",
            ],
        ]
        _table(
            f"append-to-event latency ({rate:,} lines/s for {seconds:g} s; the 0.2 s tick bounds p99 near 200 ms)",
            ["path", "lines/s", "events", "p50 ms", "p99 ms", "max ms"],
            rows,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


FOLLOW_CHILD = r"""
import resource, sys, time
sys.path.insert(0, sys.argv[3])
path, mode = sys.argv[1], sys.argv[2]
t0 = time.perf_counter(); n = 0
if mode == "tailer":
    from console.monitor.tailer import Tailer
    from console.monitor.progress import make_parser
    t = Tailer(path); p = make_parser("nemo-rl"); ev = 0
    while True:
        got = t.poll()
        for ln in got:
            ev += len(p.feed(ln.text))
        n += len(got)
        if t.caught_up and not got:
            break
else:
    with open(path, "rb") as fh:
        for _ in fh:
            n += 1
dt = time.perf_counter() - t0
print(n, dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _make_log(path: Path, size: int) -> None:
    block_lines = []
    step = 0
    for i in range(2000):
        if i % 200 == 0:
            step += 1
            block_lines.append(f"========================= Step {step}/10 =========================\n")
        elif i % 50 == 0:
            block_lines.append(
                "\rTraining Progress:  50%|#####     | 1/2 [00:01<00:01,  1.00s/it]" * 20 + "\n"
            )
        elif i % 7 == 0:
            block_lines.append("\x1b[36m(MegatronPolicyWorker pid=123, ip=10.0.0.1)\x1b[0m  • Loss: 0.1234\n")
        else:
            block_lines.append(
                f"INFO:2026-08-22 10:00:00,123:some ordinary log message number {i} with text\n"
            )
    block = "".join(block_lines).encode()
    giant = b"x" * (8 << 20) + b"\n"
    with open(path, "wb") as fh:
        written = 0
        while written < size:
            fh.write(block)
            written += len(block)
            if written % (256 << 20) < len(block):
                fh.write(giant)  # a few 8 MB lines without a newline in between
                written += len(giant)


def bench_rss(gb: float) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="rlc-bench-"))
    size = int(gb * (1 << 30))
    try:
        free = shutil.disk_usage(tmp).free
        if free < size * 1.5:
            print(f"\nrss: skipped, {free >> 30} GB free in {tmp} for a {gb} GB log")
            return
        log = tmp / "big.log"
        t0 = time.perf_counter()
        _make_log(log, size)
        gen = time.perf_counter() - t0
        rows = []
        for mode, label in (
            ("tailer", "Tailer.poll + NeMo-RL parser"),
            ("iter", "anchor: for line in open(f,'rb')"),
        ):
            r = subprocess.run(
                [sys.executable, "-c", FOLLOW_CHILD, str(log), mode, str(ROOT)],
                capture_output=True,
                text=True,
                check=True,
            )
            n, dt, rss_kb = r.stdout.split()
            mb = log.stat().st_size / (1 << 20)
            rows.append(
                [
                    label,
                    f"{int(n):,}",
                    f"{float(dt):.1f}",
                    f"{mb / float(dt):,.0f}",
                    f"{int(rss_kb) / 1024:.0f}",
                ]
            )
        _table(
            f"following a {log.stat().st_size / (1 << 30):.2f} GB log (generated in {gen:.0f} s; target peak RSS < 200 MB)",
            ["reader", "lines", "seconds", "MB/s", "peak RSS MB"],
            rows,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_nvml(n: int = 200) -> None:
    rows = []
    try:
        import pynvml

        t0 = time.perf_counter()
        for _ in range(n):
            try:
                pynvml.nvmlInit()
                pynvml.nvmlShutdown()
            except Exception:  # noqa: BLE001
                pass
        rows.append(["anchor: raw pynvml.nvmlInit()", f"{(time.perf_counter() - t0) / n * 1e6:,.0f}", "", ""])
    except ImportError:
        pass
    g = GpuSampler()
    first = g.sample()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        snap = g.sample()
        ts.append(time.perf_counter() - t0)
    state = f"{len(snap.devices)} GPU(s)" if snap.available else first.reason
    rows.append(
        [
            "GpuSampler.sample()",
            f"{statistics.mean(ts) * 1e6:,.0f}",
            f"{statistics.mean(ts) * 100:.4f}",
            state,
        ]
    )
    h = HostSampler()
    h.sample()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        h.sample()
        ts.append(time.perf_counter() - t0)
    rows.append(
        [
            "HostSampler.sample()",
            f"{statistics.mean(ts) * 1e6:,.0f}",
            f"{statistics.mean(ts) * 100:.4f}",
            f"{len(h.paths)} paths",
        ]
    )
    g.close()
    _table("sampling cost at 1 Hz", ["call", "us/call", "% of one core", "state"], rows)


def bench_parse(n: int = 200_000) -> None:
    from console.monitor.progress import make_parser
    from console.monitor.text import clean_segments

    rows = []
    samples = ROOT / "console" / "demo" / "samples"
    for framework, name in (("nemo-rl", "nemo-rl-grpo-megatron.log"), ("verl", "verl-ppo-megatron-oom.log")):
        raws = (samples / name).read_bytes().split(b"\n")
        raws = (raws * (n // len(raws) + 1))[:n]
        t0 = time.process_time()
        lines = [s for raw in raws for s in clean_segments(raw)]
        anchor = time.process_time() - t0
        best = float("inf")
        for _ in range(3):
            parser = make_parser(framework)
            t0 = time.process_time()
            for text in lines:
                parser.feed(text, 0.0)
            best = min(best, time.process_time() - t0)
        rows.append(
            [framework, f"{len(lines):,}", f"{best / len(lines) * 1e6:.2f}", f"{anchor / n * 1e6:.2f}"]
        )
    _table(
        "progress parsing, CPU per line (best of 3)",
        ["parser", "lines", "us/line", "anchor: clean_segments us/line"],
        rows,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="latency,rss,nvml,parse")
    ap.add_argument("--rate", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--gb", type=float, default=2.0)
    args = ap.parse_args()
    only = set(args.only.split(","))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    if "latency" in only:
        bench_latency(args.rate, args.seconds)
    if "rss" in only:
        bench_rss(args.gb)
    if "nvml" in only:
        bench_nvml()
    if "parse" in only:
        bench_parse()
    return 0


if __name__ == "__main__":
    sys.exit(main())
