"""Benchmark of the local launcher and supervisor; prints a table.

- launch -> child running: from ``start_run()`` until the step's own code runs (it writes a file), and
  until ``start_run()`` returns (what ``run --detach`` waits for);
- supervisor idle cost while a step sleeps: CPU percent over a window, RSS and USS memory.

Usage: ``python scripts/bench_launch.py [--repeat N] [--idle-seconds S]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

from console.rundir.state import read_state
from console.runs.cancel import cancel_run
from console.runs.launch import start_run
from console.spec import RunSpec


def wait(pred, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise SystemExit("timed out")
        time.sleep(0.002)


def bench_launch(runs: Path, repeat: int) -> tuple[list[float], list[float]]:
    returned, running = [], []
    for i in range(repeat):
        mark = runs / f"mark{i}"
        code = f"open({str(mark)!r}, 'w').write('x')"
        plan = {"steps": [{"name": "probe", "argv": [sys.executable, "-S", "-c", code], "cwd": None}]}
        t0 = time.perf_counter()
        run_dir = start_run(RunSpec(runs_dir=str(runs)), plan=plan)
        returned.append(time.perf_counter() - t0)
        wait(mark.exists)
        running.append(time.perf_counter() - t0)
        wait(lambda rd=run_dir: read_state(rd)["status"] not in ("pending", "running"))
    return returned, running


def bench_idle(runs: Path, seconds: float) -> tuple[float, int, int]:
    plan = {"steps": [{"name": "sleeper", "argv": ["sleep", "600"], "cwd": None}]}
    run_dir = start_run(RunSpec(runs_dir=str(runs)), plan=plan)
    wait(lambda: read_state(run_dir)["steps"][0]["status"] == "running")
    time.sleep(1.0)  # past start-up
    sup = psutil.Process(read_state(run_dir)["supervisor_pid"])
    c0 = sum(sup.cpu_times()[:2])
    t0 = time.monotonic()
    time.sleep(seconds)
    cpu = 100.0 * (sum(sup.cpu_times()[:2]) - c0) / (time.monotonic() - t0)
    mem = sup.memory_full_info()
    cancel_run(run_dir, grace=2.0)
    return cpu, mem.rss, mem.uss


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--idle-seconds", type=float, default=5.0)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-launch-") as tmp:
        runs = Path(tmp)
        returned, running = bench_launch(runs, args.repeat)
        cpu, rss, uss = bench_idle(runs, args.idle_seconds)
    rows = [
        ("start_run() returns (run --detach)", returned, "s"),
        ("launch -> step code running", running, "s"),
    ]
    print(f"{'measure':<40} {'median':>9} {'min':>9} {'max':>9}")
    for name, vals, unit in rows:
        print(
            f"{name:<40} {statistics.median(vals):>8.3f}{unit} {min(vals):>8.3f}{unit} {max(vals):>8.3f}{unit}"
        )
    print(f"{'supervisor idle CPU (step sleeping)':<40} {cpu:>8.2f}%")
    print(f"{'supervisor RSS':<40} {rss / 2**20:>7.1f}MiB")
    print(f"{'supervisor USS':<40} {uss / 2**20:>7.1f}MiB")
    print(
        f"(repeat={args.repeat}, idle window={args.idle_seconds}s, cores={psutil.cpu_count()}, "
        f"load={psutil.getloadavg()[0]:.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
