"""Benchmark: the console's virtual log view on a huge log (default 5 GB, sparse-ish, in /tmp).

The log is written as a NeMo-RL-style head (dense lines, a CUDA OOM at line 10), then every
256 MB a dense 4 MB block of log lines with holes between (sparse file: the holes read as NUL
bytes, i.e. giant lines the view must cut, not choke on), then a dense tail. With less than
12 GB free in the target folder, 1 GB is used instead (said in the output).

Measured in a headless Textual app at 80x24 (the view in a screen, as the Triage screen holds it):
first screen (open -> first 24 lines rendered), jump to line 10 (goto + render), jump to the last
line once indexed, time to index the whole file, peak RSS of this process.

    python scripts/bench_logview.py [--size-gb 5] [--dir /tmp] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import sys
import time
from pathlib import Path

from textual.app import App, ComposeResult

from console.tui.widgets.virtuallog import VirtualLogView

GB = 1 << 30
MB = 1 << 20


def _lines(first: int, count: int) -> bytes:
    out = []
    for i in range(first, first + count):
        out.append(
            f"(VllmGenerationWorker pid=4242) INFO 11-21 22:36:{i % 60:02d} step {i}: "
            f"loss={1.0 / (1 + i % 97):.4f} reward={(i % 50) / 50:.3f} tokens/s=1234.5"
        )
    return ("\n".join(out) + "\n").encode()


def make_log(path: Path, size: int, dense: bool = False) -> int:
    """Write the sparse-ish log; returns the bytes actually written (not holes)."""
    written = 0
    with open(path, "wb") as fh:
        head = [f"========================= Step {i}/500 =========================" for i in range(1, 10)]
        head.append(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
            "capacity of 79.10 GiB of which 1.2 GiB is free."
        )
        data = ("\n".join(head) + "\n").encode()
        fh.write(data)
        written += len(data)
        line = 11
        block = 4 * MB
        while fh.tell() + block < size - 16 * MB:
            start = fh.tell()
            chunk = bytearray()
            while len(chunk) < block:
                piece = _lines(line, 2000)
                chunk += piece
                line += 2000
            fh.write(chunk)
            written += len(chunk)
            fh.seek(start + (len(chunk) if dense else 256 * MB))  # a hole, unless dense
        fh.write(b"\n")
        tail = _lines(line, 20000)
        fh.write(tail)
        written += len(tail) + 1
        fh.truncate(max(fh.tell(), 0))
    return written


class TimedView(VirtualLogView):
    """The view, noting when each line number is first painted (what the user sees)."""

    painted: dict[tuple[int, bool], float]

    def render_line(self, y: int):  # noqa: ANN201 - Strip
        strip = super().render_line(y)
        number = self.scroll_offset.y + y + 1
        if self.index is not None and number <= self.index.line_count:
            self.painted.setdefault((number, number == self.target), time.perf_counter())
        return strip


async def painted(view: TimedView, key: tuple[int, bool]) -> float:
    while key not in view.painted:
        await asyncio.sleep(0.001)
    return view.painted[key]


class Bench(App[None]):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def compose(self) -> ComposeResult:
        view = TimedView(self.path, id="view")
        view.painted = {}
        yield view


async def measure(path: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    app = Bench(path)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(TimedView)
        out["first_screen_s"] = await painted(view, (24, False)) - t0  # the 24th row painted: a full screen
        assert view.index is not None and view.index.line(1).startswith("=")
        view.scroll_to(y=5000, animate=False, immediate=True)  # somewhere else first
        await pilot.pause(0.2)
        view.index._cache.clear()  # noqa: SLF001 - the finding's line is read from the file, not the cache
        t1 = time.perf_counter()
        view.goto(10)
        out["jump_line_10_s"] = await painted(view, (10, True)) - t1  # line 10, painted as the target
        assert "OutOfMemoryError" in view.index.line(10)
        while view.index is not None and not view.index.scan_done:
            await asyncio.sleep(0.05)
        out["full_index_s"] = time.perf_counter() - t0
        view.index._cache.clear()  # noqa: SLF001
        t3 = time.perf_counter()
        last = view.line_count
        view.goto(last)
        out["jump_last_line_s"] = await painted(view, (last, True)) - t3
        out["lines"] = float(last)
        out["index_mb"] = (view.index.memory_bytes() if view.index else 0) / MB
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


async def measure_triage(path: Path) -> dict[str, float]:
    """The same in the Triage screen, which also triages the whole file (in a child process)."""
    import tempfile

    from console.tui import screens  # noqa: F401 - the screens package exists
    from console.tui.app import ConsoleApp
    from console.tui.screens import triage as triage_screen

    painted: dict[tuple[int, bool], float] = {}
    original = VirtualLogView.render_line

    def render_line(self: VirtualLogView, y: int):  # noqa: ANN202 - Strip
        strip = original(self, y)
        number = self.scroll_offset.y + y + 1
        if self.index is not None and number <= self.index.line_count:
            painted.setdefault((number, number == self.target), time.perf_counter())
        return strip

    VirtualLogView.render_line = render_line  # type: ignore[method-assign]
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as runs:
        app = ConsoleApp(Path(runs), open_log=path)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.screen
            assert isinstance(screen, triage_screen.TriageScreen)
            view = screen.query_one(VirtualLogView)
            rows = view.scrollable_content_region.height  # the log pane's rows at 80x24
            while (rows, False) not in painted:
                await asyncio.sleep(0.001)
            out["first_screen_s"] = painted[(rows, False)] - t0
            view.scroll_to(y=5000, animate=False, immediate=True)
            await pilot.pause(0.2)
            view.index._cache.clear()  # noqa: SLF001
            painted.pop((10, True), None)
            t1 = time.perf_counter()
            view.goto(10)
            while (10, True) not in painted:
                await asyncio.sleep(0.001)
            out["jump_line_10_s"] = painted[(10, True)] - t1
            while screen.result is None:
                await asyncio.sleep(0.1)
            out["triage_done_s"] = time.perf_counter() - t0
            out["findings"] = float(len(screen.result.get("findings") or []))
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["child_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-gb", type=float, default=5.0)
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--dense", action="store_true", help="no holes: every byte a log line (uses the disk)")
    ap.add_argument("--triage", action="store_true", help="also measure the Triage screen (engine running)")
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    args = ap.parse_args()
    folder = Path(args.dir)
    free = shutil.disk_usage(folder).free
    size = int(args.size_gb * GB)
    note = ""
    if free < 12 * GB and size > GB:
        size = GB
        note = f" (only {free / GB:.1f} GB free in {folder}: using 1 GB)"
    path = folder / f"rl-console-bench-{os.getpid()}.log"
    try:
        t = time.perf_counter()
        written = make_log(path, size, args.dense)
        made = time.perf_counter() - t
        result = asyncio.run(measure(path))
        tri = asyncio.run(measure_triage(path)) if args.triage else None
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)
    apparent = size
    print(
        f"log: {apparent / GB:.2f} GB apparent, {written / MB:.0f} MB of real lines written "
        f"in {made:.1f}s{note}"
    )
    rows = [
        ("first screen (app start -> 24 rows painted)", f"{result['first_screen_s']:.3f} s", "< 1 s"),
        ("jump to the finding at line 10", f"{result['jump_line_10_s']:.3f} s", "< 1 s"),
        ("index of the whole file built", f"{result['full_index_s']:.1f} s", "(background)"),
        ("jump to the last line", f"{result['jump_last_line_s']:.3f} s", ""),
        ("lines in the file", f"{int(result['lines']):,}", ""),
        ("index size", f"{result['index_mb']:.1f} MB", ""),
        ("peak RSS", f"{result['peak_rss_mb']:.0f} MB", "< 300 MB"),
    ]
    if tri is not None:
        rows += [
            ("Triage screen: first screen", f"{tri['first_screen_s']:.3f} s", "< 1 s"),
            ("Triage screen: jump to line 10", f"{tri['jump_line_10_s']:.3f} s", "< 1 s"),
            (
                "Triage screen: findings shown (child process)",
                f"{tri['triage_done_s']:.1f} s",
                "(background)",
            ),
            ("Triage screen: peak RSS (console)", f"{tri['peak_rss_mb']:.0f} MB", "< 300 MB"),
            ("Triage screen: peak RSS (triage child)", f"{tri['child_rss_mb']:.0f} MB", ""),
        ]
    w = max(len(r[0]) for r in rows)
    print(f"{'measure':<{w}}  {'value':>12}  target")
    for name, value, target in rows:
        print(f"{name:<{w}}  {value:>12}  {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
