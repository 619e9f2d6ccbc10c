"""Report: the run's summary in the procedure's format, saved to report.md and shown for copying."""

from __future__ import annotations

from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Header, Static, TextArea

from console.fileio import write_text_atomic
from console.redact import redact_text
from console.tui import backend
from console.tui.messages import TaskDone
from console.tui.widgets.footer import ConsoleFooter


class ReportScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("s", "save", "Save report.md"),
        Binding("c", "copy", "Copy"),
    ]

    def __init__(self, run_dir: Path) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.markdown: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(
            f"Report of {self.run_dir.name}: rendering...", markup=False, id="report-status", classes="hint"
        )
        yield TextArea("", read_only=True, id="report-body", soft_wrap=True, show_line_numbers=False)
        yield ConsoleFooter()

    def on_mount(self) -> None:
        self.sub_title = self.run_dir.name
        self.render_report()

    @work(thread=True, exclusive=True, group="report")
    def render_report(self) -> None:
        try:
            done = TaskDone("report", backend.render_report(self.run_dir))
        except Exception as exc:  # noqa: BLE001 - fall back to a saved report, else say why
            saved = self.run_dir / "report.md"
            done = TaskDone("report", error=str(exc))
            if saved.is_file():
                text = saved.read_text(encoding="utf-8", errors="replace")
                done = TaskDone("report", text, error=f"showing saved report.md ({exc})")
        self.post_message(done)

    def on_task_done(self, message: TaskDone) -> None:
        status = self.query_one("#report-status", Static)
        if message.result is None:
            status.update(f"No report: {message.error}")
            return
        self.markdown = redact_text(str(message.result))
        self.query_one("#report-body", TextArea).load_text(self.markdown)
        note = f" ({message.error})" if message.error else ""
        status.update(f"s: save to {self.run_dir.name}/report.md   c: copy{note}")
        self.query_one("#report-body", TextArea).focus()

    def action_save(self) -> None:
        if self.markdown is None:
            self.notify("nothing to save yet", severity="warning")
            return
        path = self.run_dir / "report.md"
        try:
            write_text_atomic(path, self.markdown)
        except OSError as exc:
            self.notify(f"could not save: {exc}", severity="error")
            return
        self.query_one("#report-status", Static).update(f"saved: {path}")
        self.notify(f"saved {path}")

    def action_copy(self) -> None:
        if self.markdown is None:
            return
        area = self.query_one("#report-body", TextArea)
        self.app.copy_to_clipboard(area.selected_text or self.markdown)
        self.notify("copied (terminal clipboard, OSC 52); the file is report.md in the run folder")
