"""The Compare screen: snapshots at 80x24 and 160x48, and the ways to open it (Home m/C, Monitor C)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tui_helpers import drive, wait_for, workers_done  # noqa: E402

from console.tui.app import ConsoleApp  # noqa: E402
from console.tui.screens.compare import CompareScreen  # noqa: E402

pytestmark = pytest.mark.timeout(60)
SIZES = [(80, 24), (160, 48)]
BASE, CAND, OTHER = "20261121-223600-demo-l0", "20261121-224500-demo-l0-lr-scale", "20261121-220000-verl-l0"
GIB = 1024**3


def write_compare_run(
    runs: Path,
    run_id: str,
    *,
    created: float,
    framework: str = "demo",
    variants: tuple[str, ...] = (),
    scale: float = 1.0,
    from_step: int = 99,
    gpu_peak: float = 10.0,
) -> Path:
    """A finished run folder with fixed curves (a layout fixture: snapshots need exact numbers)."""
    d = runs / run_id
    (d / "logs").mkdir(parents=True)
    spec = {
        "framework": framework,
        "levels": [0],
        "variants": list(variants),
        "model": None,
        "bridge_repo": None,
        "repo": None,
        "overrides": ["grpo.max_num_steps=12"],
        "env": {},
        "runs_dir": str(runs),
        "launcher": "local",
        "extra": {},
    }
    (d / "spec.json").write_text(json.dumps(spec))
    (d / "plan.json").write_text(
        json.dumps(
            {
                "spec": spec,
                "steps": [
                    {"name": "demo-grpo", "kind": "train", "argv": ["python"], "env": {}, "cwd": str(d)}
                ],
            }
        )
    )
    (d / "state.json").write_text(
        json.dumps(
            {
                "id": run_id,
                "status": "passed",
                "verdict": "Pass",
                "launcher": "local",
                "created": created,
                "started": created,
                "ended": created + 60,
                "current_step": 0,
                "linked_from": None,
                "steps": [
                    {"name": "demo-grpo", "status": "passed", "exit_code": 0, "log": "logs/01-demo-grpo.log"}
                ],
            }
        )
    )

    def curve(f: Any) -> dict[str, float]:
        return {str(s): round(f(s) * (scale if s >= from_step else 1.0), 6) for s in range(1, 13)}

    metrics = {
        "train/loss": curve(lambda s: 0.05 - 0.004 * s),
        "train/reward": curve(lambda s: 0.2 + 0.05 * s),
        "train/token_mult_prob_error": curve(lambda s: 1.0 + 0.001 * (s % 3)),
        "train/grad_norm": curve(lambda s: 0.5 - 0.01 * s),
        "timing/train/total_step_time": {str(s): 1.0 * (1.5 if scale != 1.0 else 1.0) for s in range(1, 13)},
        "timing/train/generation": {str(s): 0.4 for s in range(1, 13)},
    }
    (d / "metrics.json").write_text(json.dumps(metrics))
    gpu = {
        "t": created + 5,
        "type": "gpu",
        "step": "demo-grpo",
        "devices": [
            {
                "index": 0,
                "name": "NVIDIA H100 80GB HBM3",
                "mem_used": int(gpu_peak * GIB),
                "mem_total": 80 * GIB,
                "util": 90,
                "procs": [],
            }
        ],
    }
    (d / "events.jsonl").write_text(json.dumps(gpu) + "\n")
    return d


@pytest.fixture()
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    runs = tmp_path / "runs"
    t = time.time() - 3 * 3600 - 60
    write_compare_run(runs, OTHER, created=t - 600, framework="verl")
    write_compare_run(runs, BASE, created=t)
    write_compare_run(
        runs, CAND, created=t + 540, variants=("lr-scale",), scale=1.3, from_step=4, gpu_peak=12.5
    )
    return runs


async def settle_compare(pilot: Any) -> None:
    await workers_done(pilot, "compare")
    scr = pilot.app.screen
    assert isinstance(scr, CompareScreen) and scr.result is not None and scr.query("#cmp-diffs")


async def open_compare(pilot: Any, runs: Path) -> None:
    await pilot.pause()
    pilot.app.push_screen(CompareScreen(runs / BASE, runs / CAND))
    await settle_compare(pilot)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_compare_screen_snapshot(snap_compare: Any, runs: Path, size: tuple[int, int]) -> None:
    async def before(pilot: Any) -> None:
        await open_compare(pilot, runs)

    assert snap_compare(ConsoleApp(runs), terminal_size=size, run_before=before)


def test_compare_screen_content(runs: Path) -> None:
    app = ConsoleApp(runs)

    async def body(pilot: Any) -> None:
        await open_compare(pilot, runs)
        scr = app.screen
        assert isinstance(scr, CompareScreen)
        r = scr.result
        assert r["verdict"] == "Changed"
        moved = {m["key"]: m["first_divergence"] for m in r["metrics"] if not m["within"]}
        assert moved == {"loss": 4, "reward": 4, "grad_norm": 4, "token_mult_prob_error": 4}
        assert r["timing_regressions"] == ["step time (s)"]
        assert r["gpu"][0]["regression"] is True
        assert "Changed" in str(scr.query_one("#cmp-verdict").render())
        assert len(scr.query(".cmp-curve")) == len(r["curves"])  # baseline and candidate lines per metric
        await pilot.press("s")  # swap sides: the candidate becomes the baseline
        await workers_done(pilot, "compare")
        assert scr.result["baseline"]["id"] == CAND and scr.result["verdict"] == "Changed"

    drive(app, body)


def test_home_mark_then_compare_and_latest_peer(runs: Path) -> None:
    app = ConsoleApp(runs)

    async def body(pilot: Any) -> None:
        await workers_done(pilot, "home-scan")
        home = app.screen
        assert len(home.rows) == 3
        # rows newest first: CAND, BASE, OTHER. C on CAND with no mark: its latest peer is BASE (same
        # framework, levels and model; the verl run is not one), older first as the baseline
        await pilot.press("C")
        await settle_compare(pilot)
        assert isinstance(app.screen, CompareScreen)
        assert (app.screen.baseline.name, app.screen.candidate.name) == (BASE, CAND)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is home
        # m marks the highlighted run (CAND) as the baseline; C on OTHER compares CAND -> OTHER
        await pilot.press("m", "down", "down", "C")
        await settle_compare(pilot)
        assert (app.screen.baseline.name, app.screen.candidate.name) == (CAND, OTHER)
        r = app.screen.result
        assert r["verdict"] == "Inconclusive" and any("different configs" in x for x in r["reasons"])
        assert any(d["field"] == "framework" for d in r["differences"])
        await pilot.press("escape")
        await pilot.pause()
        # the verl run has no peer: a warning, no screen
        await pilot.press("C")
        await pilot.pause()
        assert app.screen is home

    drive(app, body)


def test_monitor_c_compares_with_latest_peer(runs: Path) -> None:
    app = ConsoleApp(runs, open_run=runs / BASE)

    async def body(pilot: Any) -> None:
        await wait_for(pilot, lambda: type(app.screen).__name__ == "MonitorScreen")
        await pilot.press("C")
        await settle_compare(pilot)
        assert (app.screen.baseline.name, app.screen.candidate.name) == (BASE, CAND)

    drive(app, body)
