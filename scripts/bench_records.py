"""Benchmark the run-record safeguards of issue 13 and print tables.

1. Metric-check bombs: wall time until ``python -m console.monitor.check_metrics`` refuses each one
   (exit 2), and the in-process refusal time.
2. The redacting step wrapper: MB/s of step output through ``console.runs.stepwrap`` (with secrets
   to mask) against the same output written straight to the log file.
3. events.jsonl: compaction time of a file of 1 Hz resource samples, and EventCursor read speed.

Usage: python scripts/bench_records.py [--mb 100]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from console.events import Event, EventCursor, compact_events
from console.monitor.check_metrics import evaluate_check

BOMBS = [
    "((10**1000)**1000)**1000 > 1",
    "round(1, -10**9) == 0",
    "-" * 1500 + "1 < 2",
    "(2**4000)*(2**4000)*(2**4000)*(2**4000) > 1",
    "(" * 5000 + "1" + ")" * 5000 + " < 2",
]


def bench_bombs(tmp: Path) -> None:
    metrics = tmp / "m.json"
    metrics.write_text('{"a": {"1": 1.0}}')
    print("| check (first 40 chars) | exit | CLI wall s | in-process ms |")
    print("|---|---|---|---|")
    for check in BOMBS:
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "console.monitor.check_metrics", str(metrics), check],
            capture_output=True,
            text=True,
            timeout=60,
        )
        wall = time.perf_counter() - start
        start = time.perf_counter()
        res = evaluate_check({"a": {"1": 1.0}}, check)
        inproc = (time.perf_counter() - start) * 1000
        assert res.refused
        print(f"| `{check[:40]}` | {proc.returncode} | {wall:.2f} | {inproc:.2f} |")


LINES = {
    "plain log lines": "step 12/30 loss=0.123 reward=0.9 lr=1e-5 grad_norm=0.3 kl=0.01 time/step=2.3 more text\n",
    "a secret on every line": "step 12/30 loss=0.123 reward=0.9 HF_TOKEN=planted-secret-value-1234 some more text\n",
}


def bench_stepwrap(tmp: Path, mb: int) -> None:
    env = {**os.environ, "MY_API_TOKEN": "planted-secret-value-1234"}
    rows = []
    cases = []
    for kind, line in LINES.items():
        n = mb * (1 << 20) // len(line)
        code = f"import sys\nline = {line!r}\nw = sys.stdout.write\nfor _ in range({n}): w(line)\n"
        cases.append((f"{kind}: direct to the log", [sys.executable, "-c", code]))
        cases.append(
            (
                f"{kind}: through stepwrap (redacted)",
                [
                    sys.executable,
                    "-m",
                    "console.runs.stepwrap",
                    str(tmp / "x.exit"),
                    "--",
                    sys.executable,
                    "-c",
                    code,
                ],
            )
        )
    for label, argv in cases:
        log = tmp / "step.log"
        with open(log, "wb") as out:
            start = time.perf_counter()
            subprocess.run(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, check=True
            )
            wall = time.perf_counter() - start
        size = log.stat().st_size
        leaked = b"planted-secret-value-1234" in log.read_bytes()
        rows.append((label, size / (1 << 20), wall, size / (1 << 20) / wall, leaked))
    print("| path | MiB written | s | MiB/s | secret in log |")
    print("|---|---|---|---|---|")
    for label, size, wall, rate, leaked in rows:
        print(f"| {label} | {size:.0f} | {wall:.2f} | {rate:.0f} | {leaked} |")


def bench_events(tmp: Path) -> None:
    path = tmp / "events.jsonl"
    now = time.time()
    devices = [
        {
            "index": i,
            "name": "NVIDIA H100",
            "uuid": f"GPU-{i:032d}",
            "mem_used": 1 << 30,
            "mem_total": 80 << 30,
            "util": 50,
            "procs": [],
        }
        for i in range(8)
    ]
    hours = 6
    with open(path, "w") as fh:
        for i in range(hours * 3600):
            t = now - hours * 3600 + i
            fh.write(Event("gpu", "train", {"devices": devices}, t=t).to_json() + "\n")
            fh.write(
                Event("host", "train", {"cpu": 10.0, "mem_used": 1, "mem_total": 2}, t=t).to_json() + "\n"
            )
            if i % 10 == 0:
                fh.write(Event("progress", "train", {"step": i // 10, "total": 3000}, t=t).to_json() + "\n")
    size = path.stat().st_size
    cursor = EventCursor(path)
    start = time.perf_counter()
    first = cursor.read()
    read_s = time.perf_counter() - start
    start = time.perf_counter()
    old, new = compact_events(path, now=now)
    comp_s = time.perf_counter() - start
    start = time.perf_counter()
    again = cursor.read()
    print("| events.jsonl (6 h, 8 GPUs, 1 Hz) | value |")
    print("|---|---|")
    print(f"| size before | {old / (1 << 20):.1f} MiB |")
    print(f"| size after compaction | {new / (1 << 20):.1f} MiB |")
    print(f"| compaction time | {comp_s:.2f} s |")
    print(
        f"| first full read (EventCursor) | {read_s:.2f} s, {len(first)} events, {size / (1 << 20) / read_s:.0f} MiB/s |"
    )
    print(
        f"| read after compaction (skips what it had) | {time.perf_counter() - start:.2f} s, {len(again)} new events |"
    )
    json.loads(path.read_text().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=100, help="MiB of step output for the stepwrap bench")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        bench_bombs(tmp)
        print()
        bench_stepwrap(tmp, args.mb)
        print()
        bench_events(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
