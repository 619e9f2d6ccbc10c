"""Home: runs (live and finished) with verdict badges and progress; new run; open a log."""

from __future__ import annotations

from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from console.tui.messages import RunsListed
from console.tui.rundata import RunRow, age_text, list_runs
from console.tui.screens.badges import status_text, verdict_badge
from console.tui.screens.compare import compare_selected, mark_baseline
from console.tui.screens.dialogs import confirm_cancel
from console.tui.widgets.footer import ConsoleFooter

REFRESH_S = 1.0


class HomeScreen(Screen[None]):
    BINDINGS = [
        Binding("n", "app.new_run", "New run"),
        Binding("enter", "open_run", "Open"),
        Binding("l", "app.open_log_prompt", "Open log"),
        Binding("r", "report", "Report"),
        Binding("c", "cancel", "Cancel run"),
        Binding("m", "mark_baseline", "Mark baseline", show=False),
        Binding("C", "compare", "Compare", show=False),
    ]
    PALETTE = [
        ("Open selected run", "Monitor the highlighted run", "action_open_run"),
        ("Report of selected run", "The summary report, saved to report.md", "action_report"),
        ("Cancel selected run", "Stop the highlighted run and its whole process tree", "action_cancel"),
        (
            "Mark run as baseline",
            "m: the highlighted run becomes the baseline of the next compare (C)",
            "action_mark_baseline",
        ),
        (
            "Compare runs",
            "C: the marked baseline vs the highlighted run, or it vs the latest like it",
            "action_compare",
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, RunRow] = {}

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static("Runs", classes="title")
        yield DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        yield Static("", markup=False, id="empty-hint")
        yield ConsoleFooter()

    def on_mount(self) -> None:
        table = self.query_one("#runs-table", DataTable)
        table.add_column("Run", key="id")
        table.add_column("Verdict", key="verdict", width=9)
        table.add_column("Status", key="status", width=9)
        table.add_column("Steps · it", key="progress", width=14)
        table.add_column("Started", key="age", width=8)
        self.scan()
        self.set_interval(REFRESH_S, self.scan)

    @property
    def runs_dir(self) -> Path:
        runs_dir: Path = self.app.runs_dir  # type: ignore[attr-defined]  # ConsoleApp's, not App's
        return runs_dir

    @work(thread=True, exclusive=True, group="home-scan")
    def scan(self) -> None:
        self.post_message(RunsListed(tuple(list_runs(self.runs_dir))))

    def on_runs_listed(self, message: RunsListed) -> None:
        table = self.query_one("#runs-table", DataTable)
        new = {r.id: r for r in message.rows}
        current = (
            table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value if table.row_count else None
        )
        order_changed = list(new) != list(self.rows)
        if order_changed:
            table.clear()
            for row in message.rows:
                table.add_row(*self._cells(row), key=row.id)
            if current in new:
                table.move_cursor(row=table.get_row_index(current))
        else:
            for row in message.rows:
                for key, value in zip(
                    ("id", "verdict", "status", "progress", "age"), self._cells(row), strict=True
                ):
                    table.update_cell(row.id, key, value)
        self.rows = new
        hint = self.query_one("#empty-hint", Static)
        hint.display = not new
        if not new:
            hint.update(
                f"No runs yet in {self.runs_dir}.\nPress n for a new run, or start "
                "`rl-console demo` in another shell: it will appear here."
            )

    @staticmethod
    def _cells(row: RunRow) -> tuple[object, ...]:
        name = row.id + (f" ← {row.linked_from}" if row.linked_from else "")
        return (
            name,
            verdict_badge(row.verdict, row.status),
            status_text(row.status),
            row.progress_text(),
            age_text(row.created),
        )

    def selected(self) -> RunRow | None:
        table = self.query_one("#runs-table", DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.rows.get(str(key))

    def _need_selected(self) -> RunRow | None:
        row = self.selected()
        if row is None:
            self.notify("No run selected: press n for a new run", severity="warning")
        return row

    def action_open_run(self) -> None:
        row = self._need_selected()
        if row is not None:
            self.app.open_monitor(row.path)  # type: ignore[attr-defined]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open_run()

    def action_report(self) -> None:
        row = self._need_selected()
        if row is not None:
            self.app.open_report(row.path)  # type: ignore[attr-defined]

    def action_cancel(self) -> None:
        row = self._need_selected()
        if row is not None:
            confirm_cancel(self, row.path, row.id, row.live)

    def action_mark_baseline(self) -> None:
        mark_baseline(self)

    def action_compare(self) -> None:
        compare_selected(self)
