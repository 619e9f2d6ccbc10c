"""The monitor's System tab says how GPU memory was attributed to the run, and when NVML could not
list processes (Pilot, from a gpu event written the way the sampler writes it)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tui_helpers import drive, wait_for, write_run  # noqa: E402

from console.events import Event  # noqa: E402
from console.monitor.gpu import GpuDevice, GpuProc, GpuSnapshot  # noqa: E402
from console.tui.app import ConsoleApp  # noqa: E402

pytestmark = pytest.mark.timeout(60)


def test_system_tab_shows_by_device_attribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    run = write_run(tmp_path / "runs")
    d0 = GpuDevice(
        0,
        "NVIDIA H100 80GB HBM3",
        "GPU-0",
        9 << 30,
        80 << 30,
        90,
        attribution="by-device",
        procs=[GpuProc(4_000_001, "?", 8 << 30, ours=True)],
    )
    d1 = GpuDevice(
        1,
        "NVIDIA H100 80GB HBM3",
        "GPU-1",
        1 << 30,
        80 << 30,
        0,
        attribution="by-device",
        procs_status="not_supported",
    )
    snap = GpuSnapshot(True, devices=[d0, d1], driver="470.82", t=1.0, attribution="by-device")
    with open(run / "events.jsonl", "a") as fh:
        fh.write(Event("gpu", step="demo-grpo", data=snap.to_event_data(), t=1e9).to_json() + "\n")
    app = ConsoleApp(tmp_path / "runs", open_run=run)
    seen: dict[str, str] = {}

    async def body(pilot: Any) -> None:
        await wait_for(pilot, lambda: getattr(app.screen, "snapshot", None) is not None)
        await pilot.press("4")
        panel: Any = app.screen.query_one("#gpu-panel")
        await wait_for(pilot, lambda: "by device" in str(panel.render()))
        seen["text"] = str(panel.render())

    drive(app, body, size=(120, 40))
    text = seen["text"]
    assert "this run 8.0 GiB" in text and "(by device: no NVML PID is the run's)" in text, text
    assert "processes unknown (not_supported)" in text, text
