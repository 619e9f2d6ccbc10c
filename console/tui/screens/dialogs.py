"""Small modal dialogs: confirm, ask for a path, and the cancel-run flow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Input, Label, Static


class ConfirmDialog(ModalScreen[bool]):
    AUTO_FOCUS = "#no"
    BINDINGS = [Binding("escape,n", "answer(False)", "No"), Binding("y", "answer(True)", "Yes")]

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__()
        self.question = question
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question)
            if self.detail:
                yield Static(self.detail, classes="hint", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Yes (y)", id="yes", variant="error")
                yield Button("No (n/esc)", id="no", variant="primary")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


class PathPrompt(ModalScreen[Path | None]):
    """Ask for a file path, validated as you type."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text)
            yield Input(placeholder="/path/to/run.log", id="path")
            yield Static("enter: open   esc: cancel", markup=False, id="path-status", classes="hint")

    def _check(self, value: str) -> tuple[Path | None, str]:
        if not value.strip():
            return None, "type a path"
        path = Path(value.strip()).expanduser()
        if not path.exists():
            return None, f"not found: {path}"
        if not path.is_file():
            return None, f"not a file: {path}"
        return path, f"ok: {path}"

    def on_input_changed(self, event: Input.Changed) -> None:
        _, msg = self._check(event.value)
        self.query_one("#path-status", Static).update(msg)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        path, msg = self._check(event.value)
        if path is None:
            self.query_one("#path-status", Static).update(msg)
            return
        self.dismiss(path)

    def action_cancel(self) -> None:
        self.dismiss(None)


def confirm_cancel(screen: Screen[Any], run_dir: Path, run_id: str, live: bool) -> None:
    """Ask, then cancel the run in the app's cancel worker (it outlives the screen)."""
    app = screen.app
    if not live:
        app.notify(f"{run_id} is not running", severity="warning")
        return

    def go(answer: bool | None) -> None:
        if answer:
            app.cancel_run(run_dir, run_id)  # type: ignore[attr-defined]
            app.notify(f"cancelling {run_id}...")

    app.push_screen(
        ConfirmDialog(
            f"Cancel run {run_id}?", "Stops all its processes (SIGINT, then SIGTERM, then SIGKILL)."
        ),
        go,
    )
