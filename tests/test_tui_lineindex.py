"""The virtual log view's line index: every line reachable by number in any file, following growth,
truncation (copytruncate) and rotation (rename + create) like the monitor's Tailer."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from console.tui.lineindex import GAP, STRIDE, LineIndex  # noqa: E402


def scan_all(ix: LineIndex) -> None:
    while ix.scan():
        pass


def test_every_line_by_number_with_giant_and_empty_lines(tmp_path: Path) -> None:
    rng = random.Random(7)
    lines = [("x" * rng.choice([0, 1, 70, 5000, GAP + 10])) + f" #{i}" for i in range(2000)]
    path = tmp_path / "big.log"
    path.write_text("\n".join(lines) + "\nunterminated")
    ix = LineIndex(path, max_line=4096)
    while ix.scan(budget=256 * 1024):  # small chunks: lines cross chunk edges
        pass
    assert ix.line_count == 2001
    giants = sum(len(ln) > GAP for ln in lines)
    assert len(ix._cp_line) <= 2000 // STRIDE + giants + 1  # checkpoints, not one offset per line
    for n in rng.sample(range(1, 2001), 400):
        got, want = ix.line(n), lines[n - 1]
        if len(want) <= 4096:
            assert got == want
        else:  # giant lines are cut, marked, and do not shift the numbering of the next ones
            assert got.startswith("x" * 100) and got.endswith(" …") and len(got) <= 4096 + 2
    assert ix.line(2001) == "unterminated"
    assert ix.line(2002) == "" and ix.line(0) == ""


def test_lines_readable_while_indexing(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(1, 300_001)))
    ix = LineIndex(path)
    assert ix.scan(budget=1 << 16)  # one small chunk: more to do
    assert 0 < ix.line_count < 300_000 and not ix.scan_done
    assert ix.line(10) == "line 10"
    assert ix.line(ix.line_count + 5) == ""  # beyond the indexed part: nothing yet, no error
    scan_all(ix)
    assert ix.line_count == 300_000 and ix.line(299_999) == "line 299999"


def test_follows_growth_truncation_and_rotation(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_text("a\nb\npart")
    ix = LineIndex(path)
    scan_all(ix)
    assert ix.line_count == 3 and ix.line(3) == "part"
    with open(path, "a") as fh:
        fh.write("ial\r\x1b[31mred\x1b[0m\n\nlast\n")
    assert ix.follow_poll()
    assert [ix.line(n) for n in range(1, 6)] == ["a", "b", "red", "", "last"]
    assert ix.line_count == 5
    with open(path, "r+") as fh:  # copytruncate
        fh.truncate(0)
    assert ix.follow_poll() and ix.generation == 1
    with open(path, "a") as fh:
        fh.write("fresh 1\nfresh 2\n")
    scan_all(ix)
    ix.follow_poll()
    assert ix.line_count == 2 and ix.line(1) == "fresh 1"
    os.rename(path, tmp_path / "run.log.1")  # rotation: a new file under the same name
    path.write_text("new 1\n")
    assert ix.follow_poll() and ix.generation == 2
    scan_all(ix)
    assert ix.line_count == 1 and ix.line(1) == "new 1"
    ix.close()


def test_cache_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "c.log"
    path.write_bytes(b"".join(b"%d\n" % i for i in range(10_000)))
    ix = LineIndex(path, cache_lines=500)
    scan_all(ix)
    for n in range(1, 10_001, 7):
        assert ix.line(n) == str(n - 1)
    assert len(ix._cache) <= 500


def test_virtual_view_jumps_and_follows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from textual.app import App, ComposeResult

    from console.tui.widgets.virtuallog import VirtualLogView

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "v.log"
    path.write_bytes(b"".join(b"row %d\n" % i for i in range(1, 5001)))

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield VirtualLogView(path, id="v")

    async def main() -> None:
        app = One()
        async with app.run_test(size=(80, 24)) as pilot:
            view: Any = app.query_one(VirtualLogView)
            for _ in range(200):
                if view.index.scan_done:
                    break
                await pilot.pause(0.02)
            assert view.goto(4321) and view.target == 4321
            await pilot.pause()
            assert view.scroll_offset.y <= 4320 < view.scroll_offset.y + view.size.height
            view.follow = True
            view.goto(view.line_count)
            with open(path, "ab") as fh:
                fh.write(b"appended\n")
            for _ in range(100):
                if view.line_count == 5001:
                    break
                await pilot.pause(0.05)
            assert view.index.line(5001) == "appended"
            assert view.scroll_offset.y == view.max_scroll_y  # following the end
            assert "5,001 lines" in view.status()

    asyncio.run(main())
