"""Samplers on their own thread (a hung NVML call stalls nothing) and events.jsonl compaction with
incremental readers that lose and repeat nothing across it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import console.runs.pipeline as pipeline_mod
from console.events import Event, EventBus

pytestmark = pytest.mark.timeout(60)


class HungGpu:
    """A GPU sampler stuck in a driver call (the only mock: there is no GPU to hang here)."""

    release = threading.Event()

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def sample(self):  # noqa: ANN201
        self.release.wait(30)
        raise RuntimeError("NVML call returned after the test")

    def close(self) -> None:
        pass


def test_a_hung_nvml_call_does_not_stall_the_supervisor_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(pipeline_mod, "GpuSampler", HungGpu)
    HungGpu.release.clear()
    bus = EventBus(tmp_path / "events.jsonl")
    log = tmp_path / "step.log"
    log.write_text("hello\n")
    pipe = pipeline_mod.Pipeline(tmp_path, "unknown", bus, {"steps": [{"name": "s", "kind": "check"}]})
    if getattr(pipe, "_sampling", None) is not None:
        pipe._sampling.stall_after_s = 0.2
    pipe.start_step("s", log, None)
    done = threading.Event()

    def loop() -> None:
        for _ in range(20):  # 20 supervisor ticks while the sampler is stuck
            pipe.tick()
            threading.Event().wait(0.05)
        pipe.end_step(0)
        done.set()

    worker = threading.Thread(target=loop, daemon=True)
    worker.start()
    worker.join(10)
    try:
        assert done.is_set(), "the supervisor loop waited for a hung sampler"
        assert "has not returned" in capsys.readouterr().err
    finally:
        HungGpu.release.set()
        pipe.close()
        bus.close()


def _line(kind: str, t: float, **data: object) -> str:
    return Event(kind, "s", dict(data), t=t).to_json() + "\n"


def test_compaction_downsamples_old_samples_and_readers_go_on(tmp_path: Path) -> None:
    from console.events import EventCursor, compact_events

    path = tmp_path / "events.jsonl"
    now = 100_000.0
    lines = []
    for i in range(1200):  # 20 minutes of 1 Hz samples, a finding every 100 s
        t = now - 1200 + i
        lines.append(_line("gpu", t, devices=[]))
        lines.append(_line("host", t, cpu=1.0))
        if i % 100 == 0:
            lines.append(_line("finding", t, **{"class": "x", "line": i}))
    path.write_text("".join(lines[:1500]))
    cursor = EventCursor(path)
    first = cursor.read()
    with open(path, "a") as fh:
        fh.write("".join(lines[1500:]))
    old, new = compact_events(path, now=now, keep_full_s=600, every_s=60)
    assert new < old * 0.6  # the older half of the samples is down to one a minute
    rest = cursor.read()
    got = [e.to_json() for e in first + rest]
    want = [ln.rstrip("\n") for ln in lines]
    assert len(got) == len(set(got)), "an event was read twice across the compaction"
    assert [g for g in got if '"finding"' in g] == [w for w in want if '"finding"' in w]
    assert got[: len(first)] == want[: len(first)]
    kept = [json.loads(x) for x in path.read_text().splitlines()]
    old_gpu = [e for e in kept if e["type"] == "gpu" and now - e["t"] > 600]
    young_gpu = [e for e in kept if e["type"] == "gpu" and now - e["t"] <= 600]
    assert 9 <= len(old_gpu) <= 11 and len(young_gpu) == 600
    assert sum(1 for e in kept if e["type"] == "finding") == 12
    with open(path, "a") as fh:
        fh.write(_line("run_state", now + 1, status="passed"))
    assert [e.type for e in cursor.read()] == ["run_state"]
