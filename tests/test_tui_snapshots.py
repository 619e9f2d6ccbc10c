"""Snapshots of the main screens at 80x24 and 160x48 (update: pytest --snapshot-update, then look)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tui_helpers import write_run  # noqa: E402

from console.tui.app import ConsoleApp  # noqa: E402
from console.tui.widgets.logview import LogView  # noqa: E402

pytestmark = pytest.mark.timeout(60)
SIZES = [(80, 24), (160, 48)]


@pytest.fixture()
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    runs = tmp_path / "runs"
    hour_ago = time.time() - 3 * 3600 - 60  # ages render as "3h ago" whenever the test runs
    write_run(runs, "20261121-223600-demo-l0", created=hour_ago)
    write_run(runs, "20261121-223700-demo-l0-nan", status="failed", verdict="Fail", failing=True,
              created=hour_ago + 30)
    return runs


async def settle_home(pilot: Any) -> None:
    for _ in range(100):
        if len(pilot.app.screen.rows) == 2:
            break
        await pilot.pause(0.05)
    await pilot.pause(0.2)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_home(snap_compare: Any, runs: Path, size: tuple[int, int]) -> None:
    assert snap_compare(ConsoleApp(runs), terminal_size=size, run_before=settle_home)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_monitor_findings(snap_compare: Any, runs: Path, size: tuple[int, int]) -> None:
    app = ConsoleApp(runs, open_run=runs / "20261121-223700-demo-l0-nan")

    async def before(pilot: Any) -> None:
        for _ in range(100):
            scr = pilot.app.screen
            if type(scr).__name__ == "MonitorScreen" and scr.query_one("#logview", LogView).total_lines == 41 \
                    and scr.query_one("#findings-table").row_count == 1:
                break
            await pilot.pause(0.05)
        await pilot.press("5")
        await pilot.pause(0.2)

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
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=size, run_before=before)


def test_help(snap_compare: Any, runs: Path) -> None:
    assert snap_compare(ConsoleApp(runs), terminal_size=(80, 24), press=["question_mark"],
                        run_before=settle_home)
