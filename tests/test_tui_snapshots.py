"""Snapshots of the main screens at 80x24 and 160x48 (update: pytest --snapshot-update, then look)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tui_helpers import workers_done, write_run  # noqa: E402

from console.tui.app import ConsoleApp  # noqa: E402
from console.tui.widgets.logview import LogView  # noqa: E402

pytestmark = pytest.mark.timeout(60)
SIZES = [(80, 24), (160, 48)]


@pytest.fixture()
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("BRIDGE_REPO", raising=False)  # the New run form shows it as a default
    runs = tmp_path / "runs"
    hour_ago = time.time() - 3 * 3600 - 60  # ages render as "3h ago" whenever the test runs
    write_run(runs, "20261121-223600-demo-l0", created=hour_ago)
    write_run(
        runs,
        "20261121-223700-demo-l0-nan",
        status="failed",
        verdict="Fail",
        failing=True,
        created=hour_ago + 30,
    )
    return runs


async def settle_home(pilot: Any) -> None:
    await workers_done(pilot, "home-scan")
    assert len(pilot.app.screen.rows) == 2


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_home(snap_compare: Any, runs: Path, size: tuple[int, int]) -> None:
    assert snap_compare(ConsoleApp(runs), terminal_size=size, run_before=settle_home)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_monitor_findings(snap_compare: Any, runs: Path, size: tuple[int, int]) -> None:
    app = ConsoleApp(runs, open_run=runs / "20261121-223700-demo-l0-nan")

    async def before(pilot: Any) -> None:
        for _ in range(100):
            scr = pilot.app.screen
            if (
                type(scr).__name__ == "MonitorScreen"
                and scr.query_one("#logview", LogView).total_lines == 41
                and scr.query_one("#findings-table").row_count == 1
            ):
                break
            await pilot.pause(0.05)
        await pilot.press("5")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_monitor_log(snap_compare: Any, runs: Path, size: tuple[int, int]) -> None:
    app = ConsoleApp(runs, open_run=runs / "20261121-223600-demo-l0")

    async def before(pilot: Any) -> None:
        for _ in range(100):
            scr = pilot.app.screen
            if type(scr).__name__ == "MonitorScreen" and scr.query_one("#logview", LogView).total_lines == 40:
                break
            await pilot.pause(0.05)
        await pilot.press("slash", *"loss=0.1", "enter")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=before)


def test_help(snap_compare: Any, runs: Path) -> None:
    assert snap_compare(
        ConsoleApp(runs), terminal_size=(80, 24), press=["question_mark"], run_before=settle_home
    )


# -- issue 15: the newcomer's screens ---------------------------------------------------------------
async def open_new_run(pilot: Any) -> Any:
    await settle_home(pilot)
    await pilot.press("n")
    await pilot.pause()
    return pilot.app.screen


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_new_run_first_question(snap_compare: Any, runs: Path, size: tuple[int, int]) -> None:
    async def before(pilot: Any) -> None:
        await open_new_run(pilot)
        await pilot.press("down", "down", "space")
        await pilot.pause()

    assert snap_compare(ConsoleApp(runs), terminal_size=size, run_before=before)


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4, 5, 6])
def test_new_run_level_proves(snap_compare: Any, runs: Path, level: int) -> None:
    """The walk at 80x24: every NeMo-RL level with its "required when" and "proves" in the guide."""

    async def before(pilot: Any) -> None:
        scr = await open_new_run(pilot)
        scr.query_one("#framework").value = "nemo-rl"
        await pilot.pause()
        scr.query_one("#touched").select("weight-mapping-refit")
        await pilot.pause()
        levels = scr.query_one("#levels")
        levels.focus()
        levels.highlighted = level
        await pilot.pause()

    assert snap_compare(ConsoleApp(runs), terminal_size=(80, 24), run_before=before)


def test_new_run_level_proves_160x48(snap_compare: Any, runs: Path) -> None:
    async def before(pilot: Any) -> None:
        scr = await open_new_run(pilot)
        scr.query_one("#framework").value = "nemo-rl"
        await pilot.pause()
        scr.query_one("#touched").select("checkpoint-export")
        levels = scr.query_one("#levels")
        levels.focus()
        levels.highlighted = 1
        await pilot.pause()

    assert snap_compare(ConsoleApp(runs), terminal_size=(160, 48), run_before=before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_new_run_variant_and_error_in_own_words(snap_compare: Any, runs: Path, size: tuple[int, int]) -> None:
    async def before(pilot: Any) -> None:
        scr = await open_new_run(pilot)
        scr.query_one("#framework").value = "nemo-rl"
        await pilot.pause()
        variants = scr.query_one("#variants")
        variants.focus()
        variants.highlighted = 3
        variants.select("vlm")
        await pilot.pause()
        await pilot.press("f2")
        await workers_done(pilot, "newrun-task")

    assert snap_compare(ConsoleApp(runs), terminal_size=size, run_before=before)


def test_new_run_demo_variant_then_launch_keys(snap_compare: Any, runs: Path) -> None:
    """The demo's NaN variant with its meaning, the last stop before ctrl+l (launch)."""

    async def before(pilot: Any) -> None:
        scr = await open_new_run(pilot)
        variants = scr.query_one("#variants")
        variants.focus()
        variants.highlighted = 0
        await pilot.press("space")
        await pilot.pause()

    assert snap_compare(ConsoleApp(runs), terminal_size=(80, 24), run_before=before)


@pytest.fixture()
def oom_log(tmp_path: Path) -> Path:
    lines = [f"========================= Step {i}/30 =========================" for i in range(1, 10)]
    lines.append("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    lines += [f"  • Loss: 0.{i:04d}" for i in range(200)]
    log = tmp_path / "oom.log"
    log.write_text("\n".join(lines) + "\n")
    return log


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_triage_with_advice(snap_compare: Any, runs: Path, oom_log: Path, size: tuple[int, int]) -> None:
    app = ConsoleApp(runs, open_log=oom_log)

    async def before(pilot: Any) -> None:
        await workers_done(pilot, "triage")
        assert pilot.app.screen.result is not None
        for _ in range(400):  # the index worker follows the file on: it never ends, its scan does
            if pilot.app.screen.query_one("#triage-log").index.scan_done:
                break
            await pilot.pause(0.05)
        # the log bar is redrawn on an interval: wait for the one that shows the finished index (a loaded
        # machine can take the snapshot between the scan's end and that redraw)
        for _ in range(400):
            if "indexing" not in str(pilot.app.screen.query_one("#triage-logbar").render()):
                break
            await pilot.pause(0.05)
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_monitor_metrics(snap_compare: Any, runs: Path, size: tuple[int, int]) -> None:
    app = ConsoleApp(runs, open_run=runs / "20261121-223600-demo-l0")

    async def before(pilot: Any) -> None:
        for _ in range(100):
            scr = pilot.app.screen
            if type(scr).__name__ == "MonitorScreen" and scr._metric_names:
                break
            await pilot.pause(0.05)
        await pilot.press("3")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_report(snap_compare: Any, runs: Path, size: tuple[int, int]) -> None:
    app = ConsoleApp(runs, open_run=runs / "20261121-223700-demo-l0-nan")

    async def before(pilot: Any) -> None:
        for _ in range(100):
            if type(pilot.app.screen).__name__ == "MonitorScreen":
                break
            await pilot.pause(0.05)
        await pilot.press("r")
        await workers_done(pilot, "report")
        assert pilot.app.screen.markdown is not None

    assert snap_compare(app, terminal_size=size, run_before=before)
