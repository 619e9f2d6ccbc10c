"""The rl-console Textual app: owns themes, settings and the screen stack."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import get_current_worker

from console.tui import backend
from console.tui.config import load_config, save_config
from console.tui.messages import RunCancelled, RunsWatched
from console.tui.notify import CHANNELS, StateWatcher, announce, settings
from console.tui.rundata import list_runs
from console.tui.screens.dialogs import PathPrompt
from console.tui.screens.help import HelpScreen
from console.tui.screens.home import HomeScreen
from console.tui.screens.report import ReportScreen
from console.tui.themes import DEFAULT_THEME, load_themes, resolve_theme_name

QUIT_NOTE = "q quits the console only: runs keep going"
WATCH_S = 1.0
CANCEL_GRACE_S = 10.0


class ConsoleApp(App[int]):
    TITLE = "rl-console"
    SUB_TITLE = QUIT_NOTE
    CSS_PATH = "console.tcss"
    BINDINGS = [
        Binding("q", "quit", "Quit", tooltip=QUIT_NOTE),
        Binding("question_mark", "help", "Help"),
        Binding("t", "cycle_theme", "Theme"),
    ]

    def __init__(
        self,
        runs_dir: Path,
        *,
        open_run: Path | None = None,
        open_log: Path | None = None,
        theme: str | None = None,
    ) -> None:
        super().__init__()
        self.runs_dir = runs_dir
        self._open_run = open_run
        self._open_log = open_log
        self._wanted_theme = theme
        self.our_themes: list[str] = []
        self._themes_ready = False
        self._watcher = StateWatcher()
        self.announced: list[tuple[str, list[str]]] = []  # (message, channels): tests and Help read it
        self.compare_mark: Path | None = None  # the baseline marked with m on Home

    def _setup_themes(self) -> None:
        loaded = load_themes()
        for theme in loaded.themes:
            self.register_theme(theme)
            self.our_themes.append(theme.name)
        if loaded.notice:
            self.notify(loaded.notice, severity="warning", timeout=8)
        wanted = self._wanted_theme or load_config().get("theme") or DEFAULT_THEME
        self.theme = resolve_theme_name(wanted, list(self.available_themes))
        self._themes_ready = True

    def watch_theme(self, name: str) -> None:
        if self._themes_ready:
            save_config(theme=name)

    def action_cycle_theme(self) -> None:
        names = self.our_themes or ["textual-dark", "textual-light", "textual-ansi"]
        idx = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(idx + 1) % len(names)]
        self.notify(f"theme: {self.theme} (remembered)", timeout=2)

    def on_mount(self) -> None:
        self._setup_themes()
        self.watch_runs()
        self.set_interval(WATCH_S, self.watch_runs)
        self.push_screen(HomeScreen())
        if self._open_run is not None:
            self.open_monitor(self._open_run)
        elif self._open_log is not None:
            self.open_triage([self._open_log])

    @work(thread=True, exclusive=True, group="app-watch-runs")
    def watch_runs(self) -> None:
        self.post_message(RunsWatched(tuple(list_runs(self.runs_dir))))

    def on_runs_watched(self, message: RunsWatched) -> None:
        changes = self._watcher.changes(list(message.rows))
        if not changes:
            return
        enabled = settings(load_config())
        for change in changes:
            used = announce(change, enabled, self._write_terminal)
            self.announced.append((change.message(), used))
            self.notify(
                change.message().removeprefix("rl-console: "),
                timeout=6,
                severity="error" if change.new in ("failed", "blocked") else "information",
            )

    @work(thread=True, group="cancel-run")
    def cancel_run(self, run_dir: Path, run_id: str) -> None:
        """Wait for ``rl-console cancel`` in a child process; when the console quits first, this worker
        is cancelled and leaves the child to finish the cancel."""
        worker = get_current_worker()
        with tempfile.TemporaryFile() as output:
            try:
                proc = backend.start_cancel(run_dir, CANCEL_GRACE_S, output)
            except OSError as exc:
                self.post_message(RunCancelled(run_id, str(exc), ok=False))
                return
            while proc.poll() is None:
                if worker.cancelled_event.wait(0.1):
                    return
            output.seek(0)
            lines = output.read().decode("utf-8", "replace").strip().splitlines()
        said = lines[-1] if lines else f"rl-console cancel exited {proc.returncode}"
        self.post_message(RunCancelled(run_id, said, ok=proc.returncode == 0))

    def on_run_cancelled(self, message: RunCancelled) -> None:
        if message.ok:
            self.notify(message.output)
        else:
            self.notify(f"cancel of {message.run_id} failed: {message.output}", severity="error")

    def _write_terminal(self, data: str) -> None:
        driver = getattr(self, "_driver", None)
        if driver is not None and not self.is_headless:
            driver.write(data)
            driver.flush()

    def toggle_notify(self, channel: str) -> None:
        enabled = settings(load_config())
        save_config(**{f"notify_{channel}": not enabled[channel]})
        self.notify(f"notification by {channel}: {'off' if enabled[channel] else 'on'} (remembered)")

    def open_monitor(self, run_dir: Path) -> None:
        from console.tui.screens.monitor import MonitorScreen

        self.push_screen(MonitorScreen(run_dir))

    def open_triage(self, paths: list[Path]) -> None:
        from console.tui.screens.triage import TriageScreen

        self.push_screen(TriageScreen(paths))

    def open_report(self, run_dir: Path) -> None:
        self.push_screen(ReportScreen(run_dir))

    def action_new_run(self) -> None:
        from console.tui.screens.newrun import NewRunScreen

        self.push_screen(NewRunScreen(self.runs_dir))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_open_log_prompt(self) -> None:
        def done(path: Path | None) -> None:
            if path is not None:
                self.open_triage([path])

        self.push_screen(PathPrompt("Open a log file for triage"), done)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for title, help_text, callback in (
            ("New run", "Choose levels, preview commands, preflight, launch", self.action_new_run),
            (
                "Open log for triage",
                "Browse a log file's findings next to its lines",
                self.action_open_log_prompt,
            ),
            ("Cycle theme", "dark -> light -> high-contrast (remembered)", self.action_cycle_theme),
            ("Help", "Key bindings of every screen", self.action_help),
        ):
            yield SystemCommand(title, help_text, callback)
        enabled = settings(load_config())
        for channel in CHANNELS:
            state = "on" if enabled[channel] else "off"
            yield SystemCommand(
                f"Notify by {channel}: {state}",
                f"Toggle the {channel} notification when a run changes state",
                lambda c=channel: self.toggle_notify(c),
            )
        for name, help_text, action in getattr(screen, "PALETTE", []):
            yield SystemCommand(name, help_text, getattr(screen, action))
