#!/usr/bin/env python
"""Console responsiveness while a run's log grows at 20k lines/s: key latency and refresh rate.

Two ways: headless (the app under ``run_test``; keys go through the driver's input queue like a
terminal's) and through a real tmux (``send-keys`` in, ``capture-pane`` out). Prints one table.

    .venv/bin/python scripts/bench_tui.py [--rate 20000] [--seconds 8] [--no-tmux]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WRITER = r"""
import sys, time
path, rate, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
tick = 0.01
per_tick = max(1, int(rate * tick))
t0 = time.monotonic(); n = 0
with open(path, "a", buffering=1 << 20) as fh:
    while time.monotonic() - t0 < seconds:
        fh.write("".join(f"step {n + i} loss=0.{(n + i) % 9973:04d} reward=0.5 tokens=1024 "
                         f"rank=0 node=gpu-01 lorem ipsum dolor sit amet\n" for i in range(per_tick)))
        fh.flush(); n += per_tick
        sleep = t0 + (n / rate) - time.monotonic()
        if sleep > 0: time.sleep(sleep)
print(n / (time.monotonic() - t0))
"""


def make_run(runs: Path) -> Path:
    run = runs / "20261121-000000-demo-l0"
    (run / "logs").mkdir(parents=True)
    step = {
        "name": "bench",
        "status": "running",
        "pid": None,
        "pgid": None,
        "exit_code": None,
        "started": time.time(),
        "ended": None,
        "log": "logs/01-bench.log",
        "reason": None,
    }
    (run / "plan.json").write_text(json.dumps({"spec": {}, "warnings": [], "steps": [{"name": "bench"}]}))
    (run / "spec.json").write_text(json.dumps({"framework": "demo", "levels": [0]}))
    (run / "state.json").write_text(
        json.dumps(
            {
                "id": run.name,
                "status": "running",
                "verdict": None,
                "created": time.time(),
                "current_step": 0,
                "steps": [step],
            }
        )
    )
    (run / "logs/01-bench.log").write_text("")
    return run


def start_writer(log: Path, rate: int, seconds: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(log), str(rate), str(seconds)], stdout=subprocess.PIPE, text=True
    )


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


# ---------------------------------------------------------------------------------- headless
def bench_headless(rate: int, seconds: float) -> dict[str, float]:
    from textual import events

    from console.tui.app import ConsoleApp
    from console.tui.screens.monitor import MonitorScreen
    from console.tui.widgets.logview import LogView

    tmp = Path(tempfile.mkdtemp(prefix="bench-tui-"))
    os.environ["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    run = make_run(tmp / "runs")
    app = ConsoleApp(tmp / "runs", open_run=run)
    handled: list[float] = []
    frames: list[float] = []
    orig_tab = MonitorScreen.action_tab

    def action_tab(self: MonitorScreen, name: str) -> None:
        orig_tab(self, name)
        handled.append(time.perf_counter())

    MonitorScreen.action_tab = action_tab  # type: ignore[method-assign]
    orig_display = app._display

    def display(screen, renderable):  # noqa: ANN001, ANN202
        if renderable is not None:
            frames.append(time.perf_counter())
        return orig_display(screen, renderable)

    app._display = display  # type: ignore[method-assign]
    result: dict[str, float] = {}

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            while not isinstance(app.screen, MonitorScreen):
                await pilot.pause(0.05)
            writer = start_writer(run / "logs/01-bench.log", rate, seconds)
            await asyncio.sleep(1.0)  # reach steady state
            lat: list[float] = []
            frame_lat: list[float] = []
            f0, t_start = len(frames), time.perf_counter()
            keys = ["2", "1"]
            i = 0
            while writer.poll() is None and time.perf_counter() - t_start < seconds - 1.5:
                before = len(handled)
                sent = time.perf_counter()
                app._driver.send_message(events.Key(keys[i % 2], keys[i % 2]))
                i += 1
                while len(handled) == before and time.perf_counter() - sent < 2:
                    await asyncio.sleep(0.001)
                if len(handled) > before:
                    lat.append(handled[-1] - sent)
                    nxt = [f for f in frames if f >= handled[-1]]
                    while not nxt and time.perf_counter() - sent < 2:
                        await asyncio.sleep(0.001)
                        nxt = [f for f in frames[-5:] if f >= handled[-1]]
                    if nxt:
                        frame_lat.append(nxt[0] - sent)
                await asyncio.sleep(0.15)
            span = time.perf_counter() - t_start
            result["fps"] = (len(frames) - f0) / span
            out, _ = writer.communicate()
            result["rate"] = float(out.strip() or 0)
            await asyncio.sleep(0.5)
            view = app.screen.query_one("#logview", LogView)
            result["shown"] = view.total_lines
            result["p50"], result["p99"] = pct(lat, 0.5) * 1e3, pct(lat, 0.99) * 1e3
            result["f50"], result["f99"] = pct(frame_lat, 0.5) * 1e3, pct(frame_lat, 0.99) * 1e3
            result["keys"] = len(lat)

    asyncio.run(main())
    MonitorScreen.action_tab = orig_tab  # type: ignore[method-assign]
    shutil.rmtree(tmp, ignore_errors=True)
    return result


# --------------------------------------------------------------------------------------- tmux
def capture(session: str) -> str:
    return subprocess.run(
        ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True
    ).stdout


def bench_tmux(rate: int, seconds: float) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-tui-tmux-"))
    run = make_run(tmp / "runs")
    session = f"bench-{uuid.uuid4().hex[:8]}"
    exe = Path(sys.executable).parent / "rl-console"
    cmd = (
        f"env XDG_CONFIG_HOME={tmp}/xdg TERM=tmux-256color {exe} tui --runs-dir {tmp}/runs --open {run.name}"
    )
    subprocess.run(["tmux", "new-session", "-d", "-x", "120", "-y", "40", "-s", session, cmd], check=True)
    result: dict[str, float] = {}
    try:
        deadline = time.monotonic() + 20
        while "1 Log" not in capture(session) and time.monotonic() < deadline:
            time.sleep(0.1)
        writer = start_writer(run / "logs/01-bench.log", rate, seconds)
        time.sleep(1.0)
        # refresh rate as seen from outside: distinct screen contents per second (a lower bound)
        t0, last, changes, caps = time.perf_counter(), "", 0, 0
        while time.perf_counter() - t0 < 2.0:
            text = capture(session)
            caps += 1
            if text != last:
                changes += 1
                last = text
            time.sleep(0.005)
        result["fps"] = changes / (time.perf_counter() - t0)
        result["cap_hz"] = caps / (time.perf_counter() - t0)
        # key latency: toggle tabs, wait until the screen shows the other tab's content
        lat: list[float] = []
        for i in range(12):
            key, needle = ("2", "Exit") if i % 2 == 0 else ("1", "lines •")
            sent = time.perf_counter()
            subprocess.run(["tmux", "send-keys", "-t", session, key], check=True)
            while time.perf_counter() - sent < 3:
                if needle in capture(session):
                    lat.append(time.perf_counter() - sent)
                    break
                time.sleep(0.005)  # leave the CPU to the console (2-core machines)
            time.sleep(0.2)
        out, _ = writer.communicate()
        result["rate"] = float(out.strip() or 0)
        result["p50"], result["p99"] = pct(lat, 0.5) * 1e3, pct(lat, 0.99) * 1e3
        result["keys"] = len(lat)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=int, default=20_000, help="log lines per second")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--no-tmux", action="store_true")
    args = ap.parse_args()
    rows = [("headless", bench_headless(args.rate, args.seconds))]
    if not args.no_tmux and shutil.which("tmux"):
        rows.append(("tmux", bench_tmux(args.rate, args.seconds)))
    print(f"target: keys handled < 100 ms, >= 10 refreshes/s, log at {args.rate} lines/s")
    print(
        f"{'mode':<9} {'lines/s':>9} {'keys':>5} {'key p50 ms':>11} {'key p99 ms':>11} "
        f"{'to-frame p50':>13} {'to-frame p99':>13} {'refresh/s':>10}"
    )
    for mode, r in rows:
        print(
            f"{mode:<9} {r.get('rate', 0):>9.0f} {r.get('keys', 0):>5.0f} {r.get('p50', 0):>11.1f} "
            f"{r.get('p99', 0):>11.1f} {r.get('f50', float('nan')):>13.1f} {r.get('f99', float('nan')):>13.1f} "
            f"{r.get('fps', 0):>10.1f}"
        )
    print("headless: key = driver input to action run; to-frame = to the next composed frame.")
    print(
        "tmux: key = send-keys to the change visible in capture-pane; refresh/s = distinct "
        "captures per second (a lower bound: capture-pane itself runs at ~"
        f"{rows[-1][1].get('cap_hz', 0):.0f} Hz)"
        if len(rows) > 1
        else ""
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
