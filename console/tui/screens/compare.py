"""Compare: baseline vs candidate. The verdict, a row per metric, both curves (sparklines at 80x24,
overlaid plots when the terminal is larger), timing and GPU memory with regressions, differences."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Header, Label, Static

from console.compare.render import gib, match_line, metric_table, num, pct, timing_table
from console.tui.messages import TaskDone, task_done
from console.tui.widgets.footer import ConsoleFooter

LARGE = (120, 40)  # plots instead of sparklines from this terminal size on
VERDICT_CLASS = {"Same": "badge-pass", "Changed": "badge-fail", "Inconclusive": "badge-blocked"}


BLOCKS = "▁▂▃▄▅▆▇█"


def _finite(values: list[float]) -> list[float]:
    return [v if not (math.isnan(v) or math.isinf(v)) else 0.0 for v in values]


def _buckets(values: list[float], width: int) -> list[float]:
    """One value per step when they fit, else the mean of each of ``width`` equal runs of steps."""
    if len(values) <= width:
        return values
    out = []
    for i in range(width):
        part = values[i * len(values) // width : (i + 1) * len(values) // width] or [values[-1]]
        out.append(sum(part) / len(part))
    return out


def spark_pair(base: list[float], cand: list[float], width: int) -> tuple[str, str]:
    """Two sparklines on one shared scale, so their heights compare (Textual's scale each alone)."""
    b, c = _buckets(_finite(base), width), _buckets(_finite(cand), width)
    lo, hi = min(b + c, default=0.0), max(b + c, default=0.0)
    span = hi - lo

    def line(values: list[float]) -> str:
        if span <= 0:
            return BLOCKS[3] * len(values)
        return "".join(BLOCKS[min(7, int((v - lo) / span * 7.999))] for v in values)

    return line(b), line(c)


def _table(table_id: str, header: tuple[str, ...], rows: list[Any], zebra: bool = False) -> DataTable[Any]:
    table: DataTable[Any] = DataTable(id=table_id, cursor_type="row", zebra_stripes=zebra)
    table.add_columns(*header)
    table.add_rows(rows)
    return table


class CompareScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("s", "swap", "Swap sides"),
        Binding("r", "refresh_compare", "Refresh"),
    ]

    def __init__(self, baseline: Path, candidate: Path) -> None:
        super().__init__()
        self.baseline, self.candidate = Path(baseline), Path(candidate)
        self.result: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self._title(), markup=False, id="cmp-title")
        yield Static("comparing...", markup=False, id="cmp-verdict")
        yield Static("", markup=False, id="cmp-match")
        yield VerticalScroll(id="cmp-body")
        yield ConsoleFooter()

    def _title(self) -> str:
        return f"base {self.baseline.name}  vs  cand {self.candidate.name}"

    def on_mount(self) -> None:
        self.sub_title = "Compare"
        self.compute(self.baseline, self.candidate)

    @work(thread=True, exclusive=True, group="compare")
    def compute(self, baseline: Path, candidate: Path) -> None:
        """The pair comes in as arguments: a swap meanwhile never mixes the sides."""
        from console.compare import compare_runs

        self.post_message(task_done("compare", lambda: compare_runs(baseline, candidate)))

    def action_swap(self) -> None:
        self.baseline, self.candidate = self.candidate, self.baseline
        self.query_one("#cmp-title", Static).update(self._title())
        self.compute(self.baseline, self.candidate)

    def action_refresh_compare(self) -> None:
        self.compute(self.baseline, self.candidate)

    async def on_task_done(self, message: TaskDone) -> None:
        if message.kind != "compare":
            return
        verdict = self.query_one("#cmp-verdict", Static)
        if message.result is None:
            verdict.update(f"No comparison: {message.error}")
            return
        r = self.result = message.result
        verdict.set_classes(VERDICT_CLASS.get(r["verdict"], ""))
        verdict.update(Text(f"{r['verdict']}: {'; '.join(r['reasons'])}"))
        self.query_one("#cmp-match", Static).update(f"Curves: {match_line(r)}")
        await self._fill(r)

    async def _fill(self, r: dict[str, Any]) -> None:
        body = self.query_one("#cmp-body", VerticalScroll)
        await body.remove_children()
        styles = {"MOVED": "bold red", "ok": "green"}
        metrics = [(*row[:-1], Text(row[-1], style=styles.get(row[-1], "dim"))) for row in metric_table(r)]
        widgets: list[Any] = [
            Static(f"Metrics: mean of the last {r['last_k']} steps", classes="cmp-section"),
            _table(
                "cmp-metrics", ("metric", "base", "cand", "delta", "rel", "div@", "tol", ""), metrics, True
            ),
            *self._curves(r),
        ]
        if r["timing"]:
            timing = [(*row[:-1], Text(row[-1], style="bold red")) for row in timing_table(r)]
            widgets.append(Static("Timing and throughput", classes="cmp-section"))
            widgets.append(_table("cmp-timing", ("", "base", "cand", "delta", "rel", ""), timing))
        if r["gpu"]:
            gpu = [
                (
                    f"{g['device']} {g['name']}",
                    gib(g["baseline_bytes"]),
                    gib(g["candidate_bytes"]),
                    gib(g["delta_bytes"]),
                    Text("REGRESSION" if g["regression"] else "", style="bold red"),
                )
                for g in r["gpu"]
            ]
            widgets.append(Static("GPU peak memory", classes="cmp-section"))
            widgets.append(_table("cmp-gpu", ("device", "base", "cand", "delta", ""), gpu))
        widgets.append(Static("Differences", classes="cmp-section"))
        lines = [
            f"{d['field']}: {d['baseline']} -> {d['candidate']}  [{d['kind']}]" for d in r["differences"]
        ]
        lines += [f"note: {n}" for n in r["notes"]]
        widgets.append(Static("\n".join(lines) or "none recorded", markup=False, id="cmp-diffs"))
        await body.mount_all(widgets)

    def _curves(self, r: dict[str, Any]) -> list[Any]:
        curves = [(m["key"], r["curves"][m["key"]]) for m in r["metrics"] if m["key"] in r["curves"]]
        if not curves:
            return []
        size = self.app.size
        large = size.width >= LARGE[0] and size.height >= LARGE[1]
        title = "baseline and candidate overlaid" if large else "baseline (top) and candidate (bottom)"
        out: list[Any] = [Static(f"Curves: {title}", classes="cmp-section")]
        if large:
            from textual_plotext import PlotextPlot

            for i in range(0, len(curves), 2):
                plots = []
                for key, c in curves[i : i + 2]:
                    plot = PlotextPlot()
                    plt = plot.plt
                    plt.plot(c["steps"], _finite(c["baseline"]), label="baseline", marker="braille")
                    plt.plot(c["steps"], _finite(c["candidate"]), label="candidate", marker="braille")
                    plt.title(key)
                    plots.append(plot)
                out.append(Horizontal(*plots, classes="cmp-plots"))
            return out
        width = max(10, size.width - 30)
        for key, c in curves:
            row = next(m for m in r["metrics"] if m["key"] == key)
            change = pct(row["rel_delta"]) if row["rel_delta"] is not None else num(row["delta"])
            label = f"{key} {change}"
            b, cand = spark_pair(c["baseline"], c["candidate"], width)
            lines = Text(b + " base\n", style="dim") + Text(cand + " cand", style="bold")
            out.append(Horizontal(Label(label, markup=False), Static(lines), classes="cmp-curve"))
        return out


def mark_baseline(screen: Any) -> None:
    """Home ``m``: remember the highlighted run as the baseline of the next ``C``."""
    row = screen.selected()
    if row is None:
        screen.notify("No run selected", severity="warning")
        return
    screen.app.compare_mark = row.path
    screen.notify(f"baseline: {row.id}. Highlight the candidate and press C", timeout=4)


def compare_selected(screen: Any, run_dir: Path | None = None) -> None:
    """Home/Monitor ``C``: the marked baseline vs this run, or this run vs its latest peer."""
    from console.compare.pick import pair_with_latest_peer

    if run_dir is None:
        row = screen.selected()
        if row is None:
            screen.notify("No run selected", severity="warning")
            return
        run_dir = row.path
    mark = screen.app.compare_mark
    if mark is not None and Path(mark).resolve() != Path(run_dir).resolve():
        screen.app.compare_mark = None
        screen.app.push_screen(CompareScreen(Path(mark), Path(run_dir)))
        return
    pair = pair_with_latest_peer(screen.app.runs_dir, Path(run_dir))
    if pair is None:
        screen.notify(
            "No other run of the same framework, levels and model: press m on a baseline first",
            severity="warning",
        )
        return
    screen.app.push_screen(CompareScreen(*pair))
