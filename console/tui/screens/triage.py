"""Triage: open any log file and browse its findings next to the lines they point at."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Header, OptionList, Static
from textual.widgets.option_list import Option

from console.monitor.text import clean_line
from console.tui import backend
from console.tui.messages import TaskDone
from console.tui.screens.badges import verdict_badge
from console.tui.widgets.footer import ConsoleFooter
from console.tui.widgets.logview import LogView

MAX_VIEW_BYTES = 32 * 1024 * 1024


def read_lines(path: Path, limit: int = MAX_VIEW_BYTES) -> tuple[list[str], int]:
    """Lines of ``path`` (cleaned); files bigger than ``limit`` are read from their tail.

    Returns the lines and the 1-based number of the first one (line numbers stay true).
    """
    size = path.stat().st_size
    first = 1
    with open(path, "rb") as fh:
        if size > limit:
            head_lines = 0
            remaining = size - limit
            while remaining > 0:  # count newlines we skip, in bounded chunks
                chunk = fh.read(min(remaining, 8 * 1024 * 1024))
                if not chunk:
                    break
                head_lines += chunk.count(b"\n")
                remaining -= len(chunk)
            data = fh.read()
            cut = data.find(b"\n")
            data = data[cut + 1:] if cut >= 0 else data
            first = head_lines + 2 if cut >= 0 else head_lines + 1
        else:
            data = fh.read()
    return [clean_line(raw[:8192]) for raw in data.split(b"\n")], first


class TriageScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("o", "app.open_log_prompt", "Open log"),
        Binding("w", "wrap", "Wrap"),
    ]

    def __init__(self, paths: list[Path]) -> None:
        super().__init__()
        self.paths = paths
        self.first_line = 1
        self.result: dict | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("triaging...", markup=False, id="triage-status", classes="hint")
        with Horizontal(id="triage-main"):
            with Vertical(id="triage-findings"):
                yield OptionList(id="triage-list")
                yield Static("", markup=False, id="triage-advice", classes="hint")
            yield LogView(id="triage-log", max_lines=200_000)
        yield ConsoleFooter()

    def on_mount(self) -> None:
        self.sub_title = ", ".join(p.name for p in self.paths)
        self.load()

    @work(thread=True, exclusive=True, group="triage")
    def load(self) -> None:
        try:
            lines, first = read_lines(self.paths[0])
        except OSError as exc:
            self.post_message(TaskDone("triage-lines", error=str(exc)))
            return
        self.post_message(TaskDone("triage-lines", (lines, first)))
        try:
            result = backend.triage_files(self.paths)
        except Exception as exc:  # noqa: BLE001 - one line to the user
            self.post_message(TaskDone("triage", error=str(exc)))
            return
        self.post_message(TaskDone("triage", result))

    def on_task_done(self, message: TaskDone) -> None:
        status = self.query_one("#triage-status", Static)
        if message.kind == "triage-lines":
            if message.error:
                status.update(f"cannot read {self.paths[0]}: {message.error}")
                return
            lines, self.first_line = message.result
            view = self.query_one("#triage-log", LogView)
            view.auto_scroll = False
            view.append_lines(f"{self.first_line + i:>6} {ln}" for i, ln in enumerate(lines))
            view.scroll_home(animate=False)
            return
        if message.error:
            status.update(f"triage unavailable: {message.error}")
            return
        self.result = message.result
        self._show_findings(message.result or {})

    def _show_findings(self, result: dict) -> None:
        status = self.query_one("#triage-status", Static)
        head = Text("Verdict ")
        head.append_text(verdict_badge(result.get("verdict")))
        primary = result.get("primary")
        if primary:
            head.append(f"  primary: {primary.get('class')} at line {primary.get('line')}")
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
        advice = self.query_one("#triage-advice", Static)
        advice.update(str((primary or {}).get("advice") or ""))
        options.focus()
        if findings:
            options.highlighted = 0

    def _finding(self, index: int | None) -> dict | None:
        findings = (self.result or {}).get("findings") or []
        return findings[index] if index is not None and 0 <= index < len(findings) else None

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._jump(self._finding(event.option_index))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self._jump(self._finding(event.option_index))
        self.query_one("#triage-log", LogView).focus()

    def _jump(self, finding: dict | None) -> None:
        if not finding:
            return
        view = self.query_one("#triage-log", LogView)
        line = int(finding.get("line") or 0)
        y = max(0, line - self.first_line)
        view.set_search(str(finding.get("evidence") or "")[:60]) if finding.get("evidence") else None
        view.scroll_to(y=max(0, y - view.scrollable_content_region.height // 2), animate=False)
        advice = self.query_one("#triage-advice", Static)
        advice.update(f"{finding.get('class')}: {finding.get('evidence', '')}"[:300])

    def action_wrap(self) -> None:
        self.query_one("#triage-log", LogView).toggle_wrap()
