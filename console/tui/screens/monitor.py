"""Monitor: live log, step progress, metrics, GPU/host, findings with fixes, verdict per deliverable."""

from __future__ import annotations

import contextlib
import math
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import (
    DataTable,
    Header,
    Input,
    Label,
    ProgressBar,
    Sparkline,
    Static,
    TabbedContent,
    TabPane,
)
from textual.worker import get_current_worker
from textual_plotext import PlotextPlot

from console.commandtext import remedy_text
from console.tui import backend
from console.tui.logfollow import LogFollower
from console.tui.messages import HostSampled, LogLines, RunUpdated, TaskDone, task_done
from console.tui.rundata import LIVE_STATUSES, RunModel, RunSnapshot, eta_text, human_bytes
from console.tui.screens.badges import status_text, verdict_badge
from console.tui.screens.compare import compare_selected
from console.tui.screens.dialogs import ConfirmDialog, confirm_cancel
from console.tui.screens.findingtext import finding_text
from console.tui.widgets.footer import ConsoleFooter
from console.tui.widgets.logview import KEEP_LINES, LogView
from console.tui.widgets.nodes import gpu_nodes_text, host_nodes_text

LOG_POLL_S = 0.08
STATE_POLL_S = 0.5
HOST_POLL_S = 2.0
KEY_METRICS = ("loss", "reward", "token_mult_prob_error", "gen_kl_error", "grad_norm", "lr")
MAX_METRIC_ROWS = 12
PLOT_MIN_SIZE = (120, 36)  # columns, rows of the screen: below this, sparklines only
TABS = ("log", "steps", "metrics", "system", "findings", "verdict")


def _bar(used: float, total: float, width: int = 20) -> str:
    frac = 0.0 if not total else max(0.0, min(1.0, used / total))
    filled = round(frac * width)
    return "█" * filled + "░" * (width - filled)


def _metric_order(name: str) -> tuple[int, str]:
    short = name.rsplit("/", 1)[-1]
    for i, key in enumerate(KEY_METRICS):
        if short == key or short.endswith("_" + key):
            return (i, name)
    return (len(KEY_METRICS), name)


class MonitorScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        *(Binding(str(i), f"tab('{tab}')", tab.title(), show=False) for i, tab in enumerate(TABS, 1)),
        Binding("slash", "ask('search')", "Search"),
        Binding("n", "search_next", "Next", show=False),
        Binding("N", "search_next(True)", "Prev", show=False),
        Binding("F", "ask('filter')", "Filter"),
        Binding("w", "wrap", "Wrap"),
        Binding("space", "follow", "Follow/pause"),
        Binding("left_square_bracket", "step_log(-1)", "Prev log", show=False),
        Binding("right_square_bracket", "step_log(1)", "Next log", show=False),
        Binding("f", "rerun_fix", "Rerun w/ fix"),
        Binding("r", "report", "Report"),
        Binding("c", "cancel", "Cancel", show=False),
        Binding("C", "compare", "Compare", show=False),
    ]
    PALETTE = [
        ("Rerun with fix", "Start a linked run with the primary finding's remedy", "action_rerun_fix"),
        ("Report", "The summary report of this run", "action_report"),
        ("Cancel run", "Stop this run and its whole process tree", "action_cancel"),
        ("Toggle wrap", "Wrap long log lines", "action_wrap"),
        ("Toggle follow", "Follow the end of the log or pause", "action_follow"),
    ]

    def __init__(self, run_dir: Path) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.snapshot: RunSnapshot | None = None
        self.log_index: int | None = None  # None: follow the current step's log
        self._log_path: Path | None = None  # the log the follower worker of generation _log_gen reads
        self._log_gen = 0
        self._log_label = ""
        self._input_mode = ""  # "search" | "filter"
        self._metric_names: list[str] = []
        self._metric_gen = 0
        self._plot_sig: tuple[Any, ...] = ()
        self._host: Mapping[str, Any] = MappingProxyType({})
        self._gpu: tuple[dict[str, Any], ...] = ()
        self._gpu_reason = ""
        self._verdict: dict[str, Any] | None = None
        self._verdict_for: str | None = None
        self._findings_sig: tuple[int, str | None] = (-1, None)
        self._finding_rows: list[dict[str, Any]] = []

    # -- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", markup=False, id="run-header")
        yield Static("", markup=False, id="verdict-banner")
        with Horizontal(id="progress-row"):
            yield ProgressBar(total=None, show_eta=False, show_percentage=True, id="step-progress")
            yield Static("", markup=False, id="progress-label")
        with TabbedContent(id="tabs", initial="log"):
            with TabPane("1 Log", id="log"):
                yield Input(placeholder="", id="log-input")
                yield LogView(id="logview")
                yield Static("", markup=False, id="log-bar")
            with TabPane("2 Steps", id="steps"):
                yield DataTable(id="steps-table", cursor_type="row")
            with TabPane("3 Metrics", id="metrics"):
                yield PlotextPlot(id="metric-plot")
                yield VerticalScroll(
                    Static("no metrics yet", id="metrics-empty", classes="hint"), id="metrics-box"
                )
            with TabPane("4 System", id="system"), VerticalScroll():
                yield Static("", markup=False, id="gpu-panel", classes="panel-text")
                yield Static("", markup=False, id="host-panel", classes="panel-text")
            with TabPane("5 Findings", id="findings"):
                yield DataTable(id="findings-table", cursor_type="row")
                yield Static("", markup=False, id="finding-detail")
            with TabPane("6 Verdict", id="verdict"), VerticalScroll():
                yield Static("", markup=False, id="verdict-panel", classes="panel-text")
        yield ConsoleFooter()

    def on_mount(self) -> None:
        self.sub_title = self.run_dir.name
        for table, columns in (
            ("#steps-table", ("#", "Step", "Status", "Exit", "Progress")),
            ("#findings-table", ("Verdict", "Class", "Line", "Evidence")),
        ):
            for col in columns:
                self.query_one(table, DataTable).add_column(col, key=col)
        self.query_one("#logview", LogView).focus()
        self._render_log_bar()
        self.watch_run()
        self.sample_host()

    # -- workers (post immutable messages only; the handlers below own the screen's state) ---------
    @work(thread=True, exclusive=True, group="monitor-watch")
    def watch_run(self) -> None:
        worker = get_current_worker()
        model = RunModel(self.run_dir)
        while not worker.is_cancelled:
            self.post_message(RunUpdated(model.refresh()))
            worker.cancelled_event.wait(STATE_POLL_S)

    @work(thread=True, exclusive=True, group="monitor-log")
    def follow_log(self, path: Path, gen: int) -> None:
        """The lines appended to ``path``, posted as tuples with one batch in flight at a time: what
        comes meanwhile waits here, trimmed to the lines the view keeps."""
        worker = get_current_worker()
        follower = LogFollower(path)
        waiting: deque[str] = deque(maxlen=KEEP_LINES)
        taken = threading.Event()
        taken.set()
        while not worker.is_cancelled:
            waiting.extend(follower.poll())
            if waiting and taken.is_set():
                taken = threading.Event()
                self.post_message(LogLines(gen, tuple(waiting), taken))
                waiting.clear()
            if not follower.backlog:  # a backlog beyond one read: catch up without sleeping
                worker.cancelled_event.wait(LOG_POLL_S)

    @work(thread=True, exclusive=True, group="monitor-host")
    def sample_host(self) -> None:
        worker = get_current_worker()
        host = backend.host_sampler(self.run_dir)
        gpu = backend.gpu_sampler()
        while not worker.is_cancelled:
            gpu_data: list[dict[str, Any]] = []
            try:
                sample = gpu.sample().to_event_data()
                gpu_data = list(sample.get("devices") or [])
                reason = str(sample.get("reason") or "")
            except Exception as exc:  # noqa: BLE001 - lost GPU / no driver: say why
                reason = str(exc)
            host_data = MappingProxyType(host.sample().to_event_data())
            self.post_message(HostSampled(host_data, tuple(gpu_data), reason))
            worker.cancelled_event.wait(HOST_POLL_S)

    @work(thread=True, exclusive=True, group="monitor-verdict")
    def compute_verdict(self) -> None:
        self.post_message(task_done("verdict", lambda: backend.run_verdict(self.run_dir)))

    # -- message handlers (own the state) ----------------------------------------------------
    def _follow(self, path: Path | None) -> None:
        """Show ``path`` in the log view (a new follower worker) unless it is the one shown."""
        if path is None or path == self._log_path:
            return
        self._log_path, self._log_gen = path, self._log_gen + 1
        self._log_label = (
            str(path.relative_to(self.run_dir)) if path.is_relative_to(self.run_dir) else str(path)
        )
        self.query_one("#logview", LogView).reset()
        self.follow_log(path, self._log_gen)

    def on_log_lines(self, message: LogLines) -> None:
        message.taken.set()
        if message.gen != self._log_gen or not self.is_attached:
            return  # from the follower of a log no longer shown, or the screen is being closed
        self.query_one("#logview", LogView).append_lines(message.lines)
        self._render_log_bar()
        self.call_after_refresh(self._render_log_bar)  # the lines' width is known after layout

    def on_run_updated(self, message: RunUpdated) -> None:
        if not self.is_attached:
            return  # a snapshot that arrives while the screen is being closed (quit, back): nothing to draw
        snap = message.snapshot
        self.snapshot = snap
        if self.log_index is None:
            self._follow(snap.log_path())
        self._render_header(snap)
        self._render_steps(snap)
        self._render_metrics(snap)
        self._render_findings(snap)
        self._render_system()
        marker = f"{snap.status}:{snap.verdict}"
        if marker != self._verdict_for:
            self._verdict_for = marker
            self.compute_verdict()
        self._render_verdict()

    def on_host_sampled(self, message: HostSampled) -> None:
        self._host, self._gpu, self._gpu_reason = message.host, message.gpu, message.gpu_reason
        self._render_system()

    def on_task_done(self, message: TaskDone) -> None:
        if message.kind == "verdict":
            self._verdict = message.result if message.error is None else {"error": message.error}
            self._render_verdict()
        elif message.kind == "rerun":
            if message.error:
                self.notify(f"rerun failed: {message.error}", severity="error")
            else:
                self.notify(f"started linked run {Path(message.result).name}")
                self.app.switch_screen(MonitorScreen(Path(message.result)))

    # -- rendering ---------------------------------------------------------------------------
    def _render_header(self, snap: RunSnapshot) -> None:
        steps = snap.step_states()
        idx = snap.current_index
        head = Text()
        head.append(self.run_dir.name, style="bold")
        head.append("  ")
        head.append_text(verdict_badge(snap.verdict, snap.status))
        if snap.verdict:
            head.append("  ")
            head.append_text(status_text(snap.status))
        if steps:
            name = steps[idx].get("name", "") if idx < len(steps) else ""
            head.append(f"  step {min(idx + 1, len(steps))}/{len(steps)} {name}")
        if snap.hang_idle_s:
            head.append(f"  no progress for {int(snap.hang_idle_s)}s", style="bold yellow")
        self.query_one("#run-header", Static).update(head)
        self._render_banner(snap)
        cur = snap.current_step_name()
        prog = snap.progress.get(cur or "", None) or snap.progress.get("?")
        bar = self.query_one("#step-progress", ProgressBar)
        label = []
        if prog and isinstance(prog.get("step"), int):
            total = prog.get("total")
            if isinstance(total, int) and total > 0:
                bar.update(total=total, progress=min(prog["step"], total))
                label.append(f"it {prog['step']}/{total}")
            else:
                label.append(f"it {prog['step']}")
            eta = eta_text(prog)
            if eta and snap.status in LIVE_STATUSES:
                label.append(eta)
        elif steps and snap.status not in LIVE_STATUSES:
            done = sum(1 for s in steps if s.get("status") in ("passed", "skipped"))
            bar.update(total=len(steps), progress=done)
        if snap.phase and snap.status in LIVE_STATUSES:
            label.append(str(snap.phase)[:30])
        if snap.complete:
            label.append("training complete")
        self.query_one("#progress-label", Static).update("  ".join(label))

    def _render_banner(self, snap: RunSnapshot) -> None:
        """Once the run is over: its verdict and what to do next, in one line that fits 80 columns."""
        banner = self.query_one("#verdict-banner", Static)
        banner.display = snap.status not in LIVE_STATUSES
        if not banner.display:
            return
        verdict = snap.verdict or snap.status
        text = Text("Run over: ", style="bold")
        text.append_text(verdict_badge(snap.verdict, snap.status))
        text.append("  next: ", style="bold")
        text.append("r report")
        if _has_fix((snap.triage or {}).get("primary")):
            text.append(" · f rerun with fix")
        elif verdict in ("Fail", "Blocked", "failed", "blocked"):
            text.append(" · 5 findings")
        text.append(" · q quit")
        banner.set_class(verdict in ("Fail", "failed", "Blocked", "blocked"), "bad")
        banner.update(text)

    def _render_steps(self, snap: RunSnapshot) -> None:
        table = self.query_one("#steps-table", DataTable)
        states = snap.step_states()
        names = [s.get("name", "?") for s in states] or [s.get("name", "?") for s in snap.plan_steps]
        if table.row_count != len(names):
            table.clear()
            for i, name in enumerate(names):
                table.add_row(str(i + 1), name, "", "", "", key=str(i))
        for i, name in enumerate(names):
            st = states[i] if i < len(states) else {}
            prog = snap.progress.get(name)
            ptxt = ""
            if prog and isinstance(prog.get("step"), int):
                ptxt = f"{prog['step']}/{prog.get('total') or '?'}"
            exit_code = st.get("exit_code")
            table.update_cell(str(i), "Status", status_text(st.get("status", "pending")))
            table.update_cell(str(i), "Exit", "" if exit_code is None else str(exit_code))
            table.update_cell(str(i), "Progress", ptxt)

    def _render_metrics(self, snap: RunSnapshot) -> None:
        names = sorted(snap.metrics, key=_metric_order)[:MAX_METRIC_ROWS]
        box = self.query_one("#metrics-box", VerticalScroll)
        if not box.is_attached:
            return
        rows = [self._metric_row(name, snap.metrics[name]) for name in names]
        if names != self._metric_names:  # new rows are mounted with their content (mounting is async)
            self._metric_names = names
            box.remove_children()
            if not names:
                box.mount(Static("no metrics yet", classes="hint"))
            self._metric_gen += 1
            g = self._metric_gen
            for i, (label, finite) in enumerate(rows):
                box.mount(
                    Horizontal(
                        Label(label, id=f"mlabel-{g}-{i}", classes="metric-label"),
                        Sparkline(finite, id=f"mspark-{g}-{i}"),
                        classes="metric-row",
                    )
                )
        else:
            for i, (label, finite) in enumerate(rows):
                with contextlib.suppress(Exception):  # a row still being mounted: the next update fills it
                    self.query_one(f"#mlabel-{self._metric_gen}-{i}", Label).update(label)
                    self.query_one(f"#mspark-{self._metric_gen}-{i}", Sparkline).data = finite
        self._render_plot(snap, names)

    @staticmethod
    def _metric_row(name: str, series: Sequence[tuple[int, float]]) -> tuple[Text, list[float]]:
        """A metric's label (last value, the first NaN/Inf step) and its finite recent values."""
        label = Text(name if len(name) <= 32 else "…" + name[-31:])
        if not series:
            return label, []
        step, value = series[-1]
        label.append(f"\n{value:.4g} @ {step}")
        bad = next((s for s, v in series if not math.isfinite(v)), None)
        if bad is not None:
            label.append(f"  NaN/Inf from step {bad}", style="bold red")
        return label, [v for _, v in series[-120:] if math.isfinite(v)]

    def _render_plot(self, snap: RunSnapshot, names: list[str]) -> None:
        """Curves of the two key metrics when the screen is big enough; sparklines only at 80x24."""
        plot = self.query_one("#metric-plot", PlotextPlot)
        big = self.size.width >= PLOT_MIN_SIZE[0] and self.size.height >= PLOT_MIN_SIZE[1]
        plot.display = big and bool(names)
        if not plot.display:
            return
        shown = names[:2]
        sig = (tuple(shown), tuple(len(snap.metrics[n]) for n in shown))
        if sig == self._plot_sig:
            return
        self._plot_sig = sig
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        for name in shown:
            points = [(s, v) for s, v in snap.metrics[name] if math.isfinite(v)]
            if points:
                plt.plot([s for s, _ in points], [v for _, v in points], label=name.rsplit("/", 1)[-1])
        plt.title("key metrics by step")
        plt.xlabel("step")
        plot.refresh()

    def _render_findings(self, snap: RunSnapshot) -> None:
        primary = (snap.triage or {}).get("primary")
        sig = (len(snap.findings), str(primary))
        if sig == self._findings_sig:
            return
        self._findings_sig = sig
        table = self.query_one("#findings-table", DataTable)
        table.clear()
        rows = list(snap.findings)
        if snap.triage and not rows:
            rows = list(snap.triage.get("findings") or [])
        self._finding_rows = rows
        for i, f in enumerate(rows):
            table.add_row(
                verdict_badge(f.get("verdict")),
                f.get("class", "?"),
                str(f.get("line", "")),
                str(f.get("evidence", ""))[:200],
                key=str(i),
            )
        self._show_finding_detail(table.cursor_row if rows else None)

    def _show_finding_detail(self, index: int | None) -> None:
        detail = self.query_one("#finding-detail", Static)
        rows = self._finding_rows
        triage = (self.snapshot.triage if self.snapshot else None) or {}
        primary = triage.get("primary")
        if index is not None and 0 <= index < len(rows):
            detail.update(finding_text(rows[index], primary, triage.get("framework"), fix_key=True))
        elif rows:
            detail.update("No failure so far; findings above are informational.")
        else:
            detail.update("No findings.")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "findings-table":
            self._show_finding_detail(event.cursor_row)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """enter on a finding: show its step's log, highlighting the evidence."""
        if event.data_table.id != "findings-table" or self.snapshot is None:
            return
        rows = self._finding_rows
        idx = event.cursor_row
        if not 0 <= idx < len(rows):
            return
        finding = rows[idx]
        names = [s.get("name") for s in self.snapshot.step_states()]
        target = names.index(finding["step"]) if finding.get("step") in names else None
        if target is not None:
            self.log_index = None if target == self.snapshot.current_index else target
            self._follow(self.snapshot.log_path(target))
        path = self.snapshot.log_path(target)
        self.action_tab("log")
        view = self.query_one("#logview", LogView)
        evidence = str(finding.get("evidence") or "").strip()[:60]
        self.set_timer(
            0.3, lambda: self._search_evidence(view, evidence, path, int(finding.get("line") or 0))
        )

    def _search_evidence(self, view: LogView, evidence: str, path: Path | None, line: int) -> None:
        if evidence and view.set_search(evidence) is not None:
            view.focus()
            self._render_log_bar()
            return
        if path is not None and path.is_file() and line > 0:  # not in the live view's part: the whole file
            from console.tui.screens.triage import TriageScreen

            self.app.push_screen(TriageScreen([path], line=line))
            return
        self.notify("that line is not in this log any more", timeout=2)

    def _render_system(self) -> None:
        if self.snapshot and (self.snapshot.gpu_nodes or self.snapshot.host_nodes):  # a Slurm job, per node
            self.query_one("#gpu-panel", Static).update(gpu_nodes_text(self.snapshot.gpu_nodes, _bar))
            self.query_one("#host-panel", Static).update(host_nodes_text(self.snapshot.host_nodes, _bar))
            return
        gpu = self.snapshot.gpu if self.snapshot and self.snapshot.gpu else self._gpu
        host = self.snapshot.host if self.snapshot and self.snapshot.host else self._host
        lines = Text()
        lines.append("GPUs\n", style="bold")
        if not gpu:
            why = self._gpu_reason or "the run reports none"
            lines.append(f"  no GPU data ({why})\n", style="dim")
        for dev in gpu:
            used, total = float(dev.get("mem_used") or 0), float(dev.get("mem_total") or 0)
            lines.append(f"  {dev.get('index', '?')} {str(dev.get('name', ''))[:18]:18} ")
            if dev.get("lost"):
                lines.append("lost (fell off the bus?)\n", style="bold red")
                continue
            lines.append(_bar(used, total), style="cyan")
            util = dev.get("util")
            lines.append(
                f" {human_bytes(used)}/{human_bytes(total)} util "
                f"{'n/a' if util is None else str(util) + '%'}{' MIG' if dev.get('mig') else ''}\n"
            )
            procs = list(dev.get("procs") or [])
            ours = sum(float(p.get("mem") or 0) for p in procs if p.get("ours"))
            if procs:
                lines.append(
                    f"     this run {human_bytes(ours)}, others "
                    f"{human_bytes(sum(float(p.get('mem') or 0) for p in procs) - ours)}\n"
                )
                if dev.get("attribution") == "by-device":  # its own line: with it the one above passed 80
                    lines.append("     (by device: no NVML PID is the run's)\n", style="dim")
            elif dev.get("procs_status", "ok") != "ok":
                lines.append(f"     processes unknown ({dev.get('procs_status')})\n", style="dim")
            for proc in procs:
                mark = "this run" if proc.get("ours") else "other"
                lines.append(
                    f"     {mark:8} pid {proc.get('pid')} {str(proc.get('name') or '')[:20]} "
                    f"{human_bytes(proc.get('mem'))}\n",
                    style="bold" if proc.get("ours") else "dim",
                )
        self.query_one("#gpu-panel", Static).update(lines)
        htext = Text()
        htext.append("Host\n", style="bold")
        if host:
            cpu = float(host.get("cpu") or 0)
            htext.append(f"  CPU {_bar(cpu, 100)} {cpu:.0f}%\n")
            mu, mt = float(host.get("mem_used") or 0), float(host.get("mem_total") or 0)
            htext.append(f"  RAM {_bar(mu, mt)} {human_bytes(mu)}/{human_bytes(mt)}\n")
            for path, free in (host.get("disks") or {}).items():
                htext.append(f"  free {human_bytes(free):>10} at {path}\n")
        else:
            htext.append("  sampling...\n", style="dim")
        self.query_one("#host-panel", Static).update(htext)

    def _render_verdict(self) -> None:
        panel = self.query_one("#verdict-panel", Static)
        text = Text()
        snap = self.snapshot
        if snap is not None:
            text.append("Run verdict: ", style="bold")
            text.append_text(verdict_badge(snap.verdict, snap.status))
            text.append("\n\n")
        data = self._verdict
        if data is None:
            text.append("computing deliverables...", style="dim")
        elif "error" in data:
            text.append(f"deliverables unavailable: {data['error']}", style="dim")
        else:
            if data.get("verdict"):
                text.append("Deliverables verdict: ", style="bold")
                text.append_text(verdict_badge(data.get("verdict")))
                text.append("\n")
            for d in data.get("deliverables") or []:
                text.append(f"  {str(d.get('name', '?'))[:34]:34} ")
                text.append_text(verdict_badge(d.get("verdict") or d.get("status")))
                reason = d.get("detail") or d.get("reason") or d.get("evidence")
                if reason:
                    text.append(f"\n      {str(reason)[:150]}", style="dim")
                text.append("\n")
            for title, key in (("Limitations", "limitations"), ("Follow-ups", "follow_ups")):
                items = data.get(key) or []
                if items:
                    text.append(f"\n{title}\n", style="bold")
                    for item in items[:8]:
                        text.append(f"  - {str(item)[:160]}\n")
        panel.update(text)

    def _render_log_bar(self) -> None:
        view = self.query_one("#logview", LogView)
        parts = [("follow" if view.auto_scroll else "PAUSED (space)"), ("wrap" if view.wrap else "nowrap")]
        if view.filter_text:
            parts.append(f"filter: {view.filter_text}")
        if view.search_text:
            parts.append(f"search: {view.search_text}")
        parts.append(f"{view.total_lines} lines")
        if view.virtual_size.width > view.scrollable_content_region.width > 0 and not view.wrap:
            parts.append("←/→ scroll")
        if self._log_label:
            parts.append(self._log_label)
        self.query_one("#log-bar", Static).update(" • ".join(parts))

    # -- actions -----------------------------------------------------------------------------
    def action_back(self) -> None:
        inp = self.query_one("#log-input", Input)
        if inp.has_class("visible"):
            inp.remove_class("visible")
            self.query_one("#logview", LogView).focus()
            return
        self.app.pop_screen()

    def action_tab(self, name: str) -> None:
        self.query_one("#tabs", TabbedContent).active = name

    def action_ask(self, mode: str) -> None:
        self.action_tab("log")
        self._input_mode = mode
        inp = self.query_one("#log-input", Input)
        view = self.query_one("#logview", LogView)
        inp.placeholder = (
            "search (enter: jump, n/N: next/prev, empty: clear)"
            if mode == "search"
            else "show only lines containing... (empty: show all)"
        )
        inp.value = view.search_text if mode == "search" else view.filter_text
        inp.add_class("visible")
        inp.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "log-input":
            return
        view = self.query_one("#logview", LogView)
        if self._input_mode == "search":
            hit = view.set_search(event.value)
            if event.value and hit is None:
                self.notify(f"not found: {event.value}", severity="warning", timeout=2)
        else:
            view.set_filter(event.value)
        event.input.remove_class("visible")
        view.focus()
        self._render_log_bar()

    def action_search_next(self, backwards: bool = False) -> None:
        if self.query_one("#logview", LogView).search_next(backwards) is None:
            self.notify(f"no {'earlier' if backwards else 'further'} match", timeout=1)
        self._render_log_bar()

    def action_wrap(self) -> None:
        self.query_one("#logview", LogView).toggle_wrap()
        self._render_log_bar()

    def action_follow(self) -> None:
        self.query_one("#logview", LogView).toggle_follow()
        self._render_log_bar()

    def action_step_log(self, delta: int) -> None:
        snap = self.snapshot
        if snap is None or not snap.step_states():
            return
        count = len(snap.step_states())
        base = snap.current_index if self.log_index is None else self.log_index
        idx = max(0, min(count - 1, base + delta))
        self.log_index = None if idx == snap.current_index else idx
        self._follow(snap.log_path(idx))
        self.notify(
            f"log of step {idx + 1}/{count}" + (" (following)" if self.log_index is None else ""), timeout=1.5
        )

    def action_compare(self) -> None:
        compare_selected(self, self.run_dir)

    def action_report(self) -> None:
        self.app.open_report(self.run_dir)  # type: ignore[attr-defined]

    def action_cancel(self) -> None:
        live = self.snapshot is not None and self.snapshot.status in LIVE_STATUSES
        confirm_cancel(self, self.run_dir, self.run_dir.name, live)

    def action_rerun_fix(self) -> None:
        primary = ((self.snapshot.triage if self.snapshot else None) or {}).get("primary")
        if not _has_fix(primary) and self._verdict:
            primary = self._verdict.get("primary") or primary
        if not primary or not _has_fix(primary):
            self.notify(
                "No remedy to apply: no primary finding with a fix (see the Findings tab)", severity="warning"
            )
            return
        remedy = {"class": primary.get("class"), **primary["remedy"]}

        def go(answer: bool | None) -> None:
            if answer:
                self.start_rerun(remedy)

        self.app.push_screen(
            ConfirmDialog(
                f"Rerun with the fix for {primary.get('class')}?", f"remedy: {remedy_text(remedy)}"
            ),
            go,
        )

    @work(thread=True, exclusive=True, group="monitor-rerun")
    def start_rerun(self, remedy: dict[str, Any]) -> None:
        self.post_message(task_done("rerun", lambda: backend.rerun_with_remedy(self.run_dir, remedy)))


def _has_fix(primary: dict[str, Any] | None) -> bool:
    remedy = (primary or {}).get("remedy") or {}
    return any(remedy.get(k) for k in ("env", "overrides", "unset"))
