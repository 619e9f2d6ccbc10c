"""Triage: open any log file (of any size) and browse its findings next to the lines they point at.

The triage engine runs in a child process (``rl-console triage --json``), so scanning a multi-GB
log never starves the view. Enter jumps to the finding's line in a virtual view of the whole file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from console.tui import backend
from console.tui.messages import TaskDone
from console.tui.screens.badges import verdict_badge
from console.tui.screens.findingtext import finding_text
from console.tui.widgets.footer import ConsoleFooter
from console.tui.widgets.virtuallog import VirtualLogView

STATUS_S = 0.5


class TriageScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("o", "app.open_log_prompt", "Open log"),
        Binding("g", "goto_finding", "Go to line"),
        Binding("tab", "app.focus_next", "Findings/log", show=False),
    ]

    def __init__(self, paths: list[Path], *, line: int | None = None) -> None:
        super().__init__()
        self.paths = paths
        self.start_line = line
        self.result: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("triaging...", markup=False, id="triage-status", classes="hint")
        with Horizontal(id="triage-top"):
            yield OptionList(id="triage-list")
            with VerticalScroll(id="triage-detail-box"):
                yield Static("", markup=False, id="triage-advice")
        yield VirtualLogView(self.paths[0], id="triage-log")
        yield Static("", markup=False, id="triage-logbar")
        yield ConsoleFooter()

    def on_mount(self) -> None:
        self.sub_title = ", ".join(p.name for p in self.paths)
        if self.start_line:
            self.query_one("#triage-log", VirtualLogView).goto(self.start_line)
        self._render_logbar()
        self.set_interval(STATUS_S, self._render_logbar)
        self.load()

    def _render_logbar(self) -> None:
        view = self.query_one("#triage-log", VirtualLogView)
        self.query_one("#triage-logbar", Static).update(f"{self.paths[0].name} · {view.status()}")

    @work(thread=True, exclusive=True, group="triage")
    def load(self) -> None:
        """Triage in a child process; the screen's closing cancels this worker, which kills the child."""
        worker = get_current_worker()
        try:
            result = backend.triage_in_subprocess(self.paths, stop=lambda: worker.is_cancelled)
        except Exception as exc:  # noqa: BLE001 - one line to the user
            self.post_message(TaskDone("triage", error=str(exc)))
            return
        if result is not None:
            self.post_message(TaskDone("triage", result))

    def on_task_done(self, message: TaskDone) -> None:
        status = self.query_one("#triage-status", Static)
        if message.error:
            status.update(f"triage unavailable: {message.error}")
            return
        self.result = message.result
        self._show_findings(message.result or {})

    def _show_findings(self, result: dict[str, Any]) -> None:
        status = self.query_one("#triage-status", Static)
        head = Text("Verdict ")
        head.append_text(verdict_badge(result.get("verdict")))
        primary = result.get("primary")
        if primary:
            head.append(f"  primary: {primary.get('class')} at line {primary.get('line')}")
        head.append("   enter: go to the line", style="dim")
        status.update(head)
        options = self.query_one("#triage-list", OptionList)
        options.clear_options()
        findings = list(result.get("findings") or [])
        for i, f in enumerate(findings):
            label = Text()
            label.append_text(verdict_badge(f.get("verdict")))
            label.append(f" {f.get('class')} L{f.get('line')}")
            if (f.get("count") or 1) > 1:
                label.append(f" x{f.get('count')}")
            options.add_option(Option(label, id=str(i)))
        if not findings:
            options.add_option(Option("no findings", disabled=True))
            self.query_one("#triage-advice", Static).update(
                "No findings: nothing in this log matched a triage rule."
            )
        options.focus()
        if findings:  # the primary finding first, else the first one
            where = [(f.get("class"), f.get("line")) for f in findings]
            mark = (primary.get("class"), primary.get("line")) if primary else None
            options.highlighted = where.index(mark) if mark in where else 0

    def _finding(self, index: int | None) -> dict[str, Any] | None:
        findings = (self.result or {}).get("findings") or []
        return findings[index] if index is not None and 0 <= index < len(findings) else None

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        finding = self._finding(event.option_index)
        if finding:
            self._detail(finding)
            self._jump(finding)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.action_goto_finding()  # the selected option is the highlighted one

    def action_goto_finding(self) -> None:
        options = self.query_one("#triage-list", OptionList)
        finding = self._finding(options.highlighted)
        if finding:
            self._jump(finding)
            self.query_one("#triage-log", VirtualLogView).focus()

    def _detail(self, finding: dict[str, Any]) -> None:
        result = self.result or {}
        self.query_one("#triage-advice", Static).update(
            finding_text(finding, result.get("primary"), result.get("framework"))
        )
        self.query_one("#triage-detail-box", VerticalScroll).scroll_home(animate=False)

    def _jump(self, finding: dict[str, Any]) -> None:
        view = self.query_one("#triage-log", VirtualLogView)
        evidence = str(finding.get("evidence") or "").strip()
        view.set_search(evidence[:60])
        line = int(finding.get("line") or 0)
        if line > 0 and not view.goto(line):
            self._render_logbar()
