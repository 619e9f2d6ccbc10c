"""The System tab at 80x24: the per-node blocks of a Slurm job (two nodes) and the GPU panel's
attribution line fit the panel's width, so no line wraps into the next (Pilot, from an
events.jsonl written the way the Slurm sampler and the local GPU sampler write it)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from textual.geometry import Region

sys.path.insert(0, str(Path(__file__).parent))
from tui_helpers import drive, wait_for, write_run  # noqa: E402

from console.events import Event  # noqa: E402
from console.monitor.gpu import GpuDevice, GpuProc, GpuSnapshot  # noqa: E402
from console.tui.app import ConsoleApp  # noqa: E402

pytestmark = pytest.mark.timeout(60)
GIB = 1 << 30
H100 = "NVIDIA H100 80GB HBM3"
NODES = ("hgx-h100-r07-n12", "hgx-h100-r07-n13")


def _node_events() -> list[Event]:
    """Two nodes as the Slurm sampler writes them: one with GPUs (Ray metrics), one whose srun probe
    failed with a long stderr line; a host block for each."""
    devices = [
        {"index": i, "name": H100, "mem_used": 79.6 * GIB, "mem_total": 79.6 * GIB, "util": 100}
        for i in range(2)
    ]
    return [
        Event(
            "gpu",
            None,
            {
                "node": NODES[0],
                "available": True,
                "reason": None,
                "devices": devices,
                "source": "ray-metrics",
                "queried": ["ray-metrics"],
            },
            t=1e9,
        ),
        Event(
            "gpu",
            None,
            {
                "node": NODES[1],
                "available": False,
                "devices": [],
                "source": "srun",
                "queried": ["ray-metrics", "srun"],
                "reason": "srun --overlap exited 1: srun: error: Unable to create step for job "
                "4242: Requested node configuration is not available",
            },
            t=1e9,
        ),
        *(
            Event(
                "host",
                None,
                {
                    "node": n,
                    "cpu": 100.0,
                    "load1": 123.45,
                    "mem_used": 1900 * GIB,
                    "mem_total": 2015 * GIB,
                    "disks": {},
                    "source": "srun",
                },
                t=1e9,
            )
            for n in NODES
        ),
    ]


def _local_events() -> list[Event]:
    """One node, memory attributed by device (no NVML PID is the run's), big numbers."""
    d0 = GpuDevice(
        0,
        H100,
        "GPU-0",
        int(139.9 * GIB),
        int(139.9 * GIB),
        100,
        attribution="by-device",
        procs=[
            GpuProc(4_000_001, "?", int(120.5 * GIB), ours=True),
            GpuProc(4_000_002, "python3 -m vllm.entrypoints.openai", int(19.4 * GIB)),
        ],
    )
    d1 = GpuDevice(1, H100, "GPU-1", GIB, 80 * GIB, 0, attribution="by-device", procs_status="not_supported")
    snap = GpuSnapshot(True, devices=[d0, d1], driver="470.82", t=1.0, attribution="by-device")
    return [Event("gpu", "demo-grpo", snap.to_event_data(), t=1e9)]


def _system_tab(tmp_path: Path, events: list[Event], ready: str) -> dict[str, Any]:
    run = write_run(tmp_path / "runs")
    with open(run / "events.jsonl", "a") as fh:
        fh.writelines(ev.to_json() + "\n" for ev in events)
    app = ConsoleApp(tmp_path / "runs", open_run=run)
    seen: dict[str, Any] = {}

    async def body(pilot: Any) -> None:
        await wait_for(pilot, lambda: getattr(app.screen, "snapshot", None) is not None)
        await pilot.press("4")
        panels = {name: app.screen.query_one(f"#{name}-panel") for name in ("gpu", "host")}
        await wait_for(
            pilot,
            lambda: (
                ready in str(panels["gpu"].render()) and all(p.content_region.width for p in panels.values())
            ),
        )
        await pilot.pause()
        for name, panel in panels.items():
            shown = panel.render_lines(Region(0, 0, panel.size.width, panel.size.height))
            seen[name] = (str(panel.render()), [strip.text.rstrip() for strip in shown], panel.region.right)

    drive(app, body)
    return seen


def _assert_fits(seen: dict[str, Any], *names: str) -> None:
    """On screen inside 80 columns, one screen row per line of the panel's text (nothing wrapped
    into the next row); a line too long for the width ends in an ellipsis."""
    for name in names:
        text, shown, right = seen[name]
        assert right <= 80, (name, right)
        while shown and not shown[-1].strip():
            shown.pop()
        assert len(shown) > 2 and len(shown) == len(text.splitlines()), (name, text, shown)
        for line, row in zip(text.splitlines(), shown, strict=True):
            assert row.strip() == line.strip() or row.endswith("…"), (name, line, row)


def test_per_node_blocks_fit_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    seen = _system_tab(tmp_path, _node_events(), "GPUs per node (2)")
    gpu, host = "\n".join(seen["gpu"][1]), "\n".join(seen["host"][1])
    assert "GPUs per node (2)" in gpu and "Hosts (2 nodes)" in host, seen
    for node in NODES:
        assert node in gpu and node in host
    assert "79.6 GiB/79.6 GiB util 100%" in gpu
    assert "no GPU data (srun --overlap exited 1: srun: error: Unable to create …)" in gpu
    assert "1.9 TiB/2.0 TiB" in host and "load 123.45" in host
    _assert_fits(seen, "gpu", "host")


def test_attribution_line_fits_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    seen = _system_tab(tmp_path, _local_events(), "by device")
    gpu = "\n".join(seen["gpu"][1])
    assert "this run 120.5 GiB, others 19.4 GiB\n      (by device: no NVML PID is the run's)" in gpu, gpu
    assert "processes unknown (not_supported)" in gpu, gpu
    _assert_fits(seen, "gpu")  # the Host panel's disk line names the runs folder: it may wrap
