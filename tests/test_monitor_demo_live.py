"""End to end on the real demo workload: a live process, its log followed through the Tailer,
parsed into events on an EventBus, its TensorBoard files read while written, then tb_dump and
check_metrics as a functional test script would run them."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from console.events import EventBus, read_events
from console.monitor.check_metrics import evaluate_checks
from console.monitor.eta import StallDetector
from console.monitor.progress import make_parser
from console.monitor.tailer import Tailer
from console.monitor.tb_dump import dump
from console.monitor.tb_reader import TbReader

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


def test_demo_run_followed_live(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "01-l0-demo.log"
    log.parent.mkdir()
    tb = tmp_path / "tb"
    bus = EventBus(tmp_path / "events.jsonl")
    parser = make_parser("demo")
    stall = StallDetector(600)
    reader = TbReader(tb)
    live_points = []
    stop = threading.Event()

    def follow() -> None:  # polled every 0.2 s, as the supervisor's tick does
        tailer = Tailer(log)
        while not stop.is_set():
            for ln in tailer.poll():
                events = parser.feed(ln.text)
                stall.observe(events)
                for e in events:
                    e.step = "l0-demo"
                    bus.publish(e)
            live_points.extend(reader.poll())
            if tailer.caught_up:
                stop.wait(0.2)

    th = threading.Thread(target=follow)
    th.start()
    with open(log, "wb") as fh:
        rc = subprocess.run(
            [
                sys.executable,
                "-m",
                "console.demo.grpo",
                "--tb-dir",
                str(tb),
                "--steps",
                "3",
                "--device",
                "cpu",
            ],
            stdout=fh,
            stderr=subprocess.STDOUT,
            timeout=150,
        ).returncode
    assert rc == 0, log.read_text()[-2000:]
    deadline = threading.Event()
    for _ in range(100):
        events, _ = read_events(tmp_path / "events.jsonl")
        if any(e.type == "complete" for e in events):
            break
        deadline.wait(0.1)
    stop.set()
    th.join(10)
    bus.close()

    events, _ = read_events(tmp_path / "events.jsonl")
    prog = [e.data for e in events if e.type == "progress"]
    assert [p["step"] for p in prog][-1] == 3 and prog[-1]["total"] == 3 and prog[-1]["done"] == 3
    assert prog[-1]["step_time_s"] is not None and prog[-1]["source"] == "demo"
    mets = [e.data for e in events if e.type == "metrics"]
    assert [m["step"] for m in mets] == [1, 2, 3] and "loss" in mets[0]["values"]
    assert any(e.type == "phase" for e in events)
    assert [e.data["reason"] for e in events if e.type == "complete"] == ["max_steps"]
    assert all(e.step == "l0-demo" for e in events)
    assert stall.check() is None

    live_points += reader.poll()
    assert {p.step for p in live_points if p.tag == "train/loss"} == {1, 2, 3}
    data = dump([tb], tmp_path / "metrics.json")
    assert set(data["train/loss"]) == {"1", "2", "3"}
    results = evaluate_checks(data, ['len(data["train/loss"]) == 3', '"3" in data["train/loss"]'])
    assert all(r.passed for r in results), [r.message for r in results]
