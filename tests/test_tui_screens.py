"""Pilot tests: every screen and action of the console, driven headless through the keyboard."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tui_helpers import drive, notes, screen_name, wait_for, workers_done, write_run  # noqa: E402

from console.errors import RunNotFound, SpecError  # noqa: E402
from console.tui.app import ConsoleApp  # noqa: E402
from console.tui.config import config_path  # noqa: E402
from console.tui.widgets.logview import LogView  # noqa: E402
from console.tui.widgets.virtuallog import VirtualLogView  # noqa: E402

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def test_home_lists_runs_and_sees_new_ones(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    app = ConsoleApp(runs)

    async def body(pilot: Any) -> None:
        home = app.screen
        await workers_done(pilot, "home-scan")
        assert home.query_one("#empty-hint").display
        assert "No runs yet" in str(home.query_one("#empty-hint").render())
        write_run(runs, "20261121-223600-demo-l0")  # a run started from the CLI meanwhile
        await wait_for(pilot, lambda: "20261121-223600-demo-l0" in home.rows, timeout=4)
        assert not home.query_one("#empty-hint").display
        assert home.selected().verdict == "Pass"

    drive(app, body)


def test_open_monitor_log_search_filter_wrap_follow(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = write_run(runs, log_lines=60)
    app = ConsoleApp(runs)

    async def body(pilot: Any) -> None:
        await workers_done(pilot, "home-scan")
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen_name(app) == "MonitorScreen")
        view = app.screen.query_one("#logview", LogView)
        await wait_for(pilot, lambda: view.total_lines == 60)
        assert app.screen.query_one("#progress-label").render().plain.startswith("it 20/20")
        await pilot.press("slash", *"loss=0.05", "enter")
        assert view.search_text == "loss=0.05"
        assert "search: loss=0.05" in str(app.screen.query_one("#log-bar").render())
        await pilot.press("F", *"reward=2.", "enter")
        assert view.line_count == 20  # steps 40..59 print reward=2.xxx
        await pilot.press("F", "backspace", "enter")  # the old filter is selected: clear it, show all
        assert view.line_count == 60
        await pilot.press("w")
        assert view.wrap
        assert not view.auto_scroll  # jumping to a search hit pauses following
        assert "PAUSED" in str(app.screen.query_one("#log-bar").render())
        await pilot.press("space")
        assert view.auto_scroll
        await pilot.press("space")
        assert not view.auto_scroll
        for key, tab in zip(
            "234561", ("steps", "metrics", "system", "findings", "verdict", "log"), strict=True
        ):
            await pilot.press(key)
            assert app.screen.query_one("#tabs").active == tab
        await pilot.press("escape")
        assert screen_name(app) == "HomeScreen"
        assert run.is_dir()

    drive(app, body)


def test_monitor_follows_a_growing_log_and_state(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = write_run(runs, status="running", verdict=None, log_lines=5)
    app = ConsoleApp(runs, open_run=run)

    async def body(pilot: Any) -> None:
        await wait_for(pilot, lambda: screen_name(app) == "MonitorScreen")
        mon = app.screen
        view = mon.query_one("#logview", LogView)
        await wait_for(pilot, lambda: view.total_lines == 5)
        with open(run / "logs/01-demo-grpo.log", "a") as fh:
            fh.write("".join(f"extra line {i}\n" for i in range(100)) + "tqdm 10%\rtqdm 50%\rtqdm 100%\n")
        await wait_for(pilot, lambda: view.total_lines == 106)
        assert view.lines[-1] == "tqdm 100%"  # \r redraws collapsed
        state = json.loads((run / "state.json").read_text())
        state.update(status="passed", verdict="Pass")
        (run / "state.json").write_text(json.dumps(state))
        await wait_for(pilot, lambda: mon.snapshot is not None and mon.snapshot.verdict == "Pass")
        assert "Pass" in mon.query_one("#run-header").render().plain
        await pilot.press("3")
        await wait_for(pilot, lambda: bool(mon._metric_names))
        assert mon._metric_names[:2] == ["loss", "reward"]

    drive(app, body)


def test_step_log_keys_switch_the_followed_log(tmp_path: Path) -> None:
    """[ and ] show another step's log: a new follower worker; the old one's lines never mix in."""
    runs = tmp_path / "runs"
    run = write_run(runs, log_lines=30)
    (run / "logs/02-second.log").write_text("".join(f"second {i}\n" for i in range(5)))
    state = json.loads((run / "state.json").read_text())
    state["steps"].append({**state["steps"][0], "name": "second", "log": "logs/02-second.log"})
    state["current_step"] = 1
    (run / "state.json").write_text(json.dumps(state))
    app = ConsoleApp(runs, open_run=run)

    async def body(pilot: Any) -> None:
        await wait_for(pilot, lambda: screen_name(app) == "MonitorScreen")
        mon = app.screen
        view = mon.query_one("#logview", LogView)
        bar = mon.query_one("#log-bar")
        await wait_for(pilot, lambda: view.total_lines == 5)
        assert "logs/02-second.log" in str(bar.render())
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: view.total_lines == 30)
        assert mon.log_index == 0 and "logs/01-demo-grpo.log" in str(bar.render())
        assert view.lines[0].startswith("step 1/20") and view.lines[-1].startswith("step 30/20")
        await pilot.press("right_square_bracket")  # back to the current step's log, followed
        await wait_for(pilot, lambda: view.total_lines == 5)
        assert mon.log_index is None and [ln.split()[0] for ln in view.lines] == ["second"] * 5

    drive(app, body)


def test_findings_and_rerun_with_fix_confirm(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    failing = write_run(runs, "20261121-223700-demo-l0", status="failed", verdict="Fail", failing=True)
    app = ConsoleApp(runs, open_run=failing)

    async def body(pilot: Any) -> None:
        await wait_for(pilot, lambda: screen_name(app) == "MonitorScreen")
        mon = app.screen
        await wait_for(pilot, lambda: mon.query_one("#findings-table").row_count == 1)
        await pilot.press("5")
        assert "cuda_oom" in mon.query_one("#finding-detail").render().plain
        assert "policy.train_micro_batch_size=1" in mon.query_one("#finding-detail").render().plain
        await pilot.press("f")
        assert screen_name(app) == "ConfirmDialog"
        await pilot.press("n")  # declined: nothing launched
        assert screen_name(app) == "MonitorScreen"
        assert sorted(p.name for p in runs.iterdir()) == [failing.name]

    drive(app, body)


def test_rerun_without_remedy_and_cancel_finished_run(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = write_run(runs)
    app = ConsoleApp(runs, open_run=run)

    async def body(pilot: Any) -> None:
        await wait_for(pilot, lambda: screen_name(app) == "MonitorScreen" and app.screen.snapshot is not None)
        await pilot.press("f")
        assert any("No remedy" in n for n in notes(app))
        await pilot.press("c")
        assert screen_name(app) == "MonitorScreen"
        assert any("not running" in n for n in notes(app))

    drive(app, body)


def test_cancel_running_run_asks_first(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    write_run(runs, status="running", verdict=None)
    app = ConsoleApp(runs)

    async def body(pilot: Any) -> None:
        await workers_done(pilot, "home-scan")
        await pilot.press("c")
        assert screen_name(app) == "ConfirmDialog"
        await pilot.press("escape")
        assert screen_name(app) == "HomeScreen"

    drive(app, body)


def _sleeping_run(runs: Path) -> Path:
    """A real run (supervisor, step process) whose one step sleeps until it is cancelled."""
    from runs_support import step

    from console.runs.launch import start_run
    from console.spec import RunSpec

    plan = {"steps": [step("sleep", "import time; time.sleep(120)")]}
    return start_run(RunSpec(runs_dir=str(runs)), plan=plan)


def test_cancel_runs_in_the_apps_worker(tmp_path: Path) -> None:
    from runs_support import reap_runs

    from console.rundir.state import read_state

    runs = tmp_path / "runs"
    run = _sleeping_run(runs)
    app = ConsoleApp(runs, open_run=run)
    seen: dict[str, Any] = {}

    async def body(pilot: Any) -> None:
        await wait_for(pilot, lambda: getattr(app.screen, "snapshot", None) is not None)
        await wait_for(pilot, lambda: app.screen.snapshot.status == "running")
        await pilot.press("c")
        assert screen_name(app) == "ConfirmDialog"
        await pilot.press("y")
        (worker,) = [w for w in app.workers if w.group == "cancel-run"]
        seen["thread"] = worker.is_running and worker._thread_worker
        await workers_done(pilot, "cancel-run")
        seen["state"] = worker.state.name

    try:
        drive(app, body)
        assert seen == {"thread": True, "state": "SUCCESS"}
        assert read_state(run)["status"] == "cancelled"
        assert any(f"run {run.name} cancelled" in n for n in notes(app))
    finally:
        assert reap_runs(runs) == []


def test_quit_during_cancel_leaves_the_cancel_to_finish(tmp_path: Path) -> None:
    from runs_support import reap_runs, wait_finished

    runs = tmp_path / "runs"
    run = _sleeping_run(runs)
    app = ConsoleApp(runs, open_run=run)
    workers: list[Any] = []

    async def body(pilot: Any) -> None:
        await wait_for(pilot, lambda: getattr(app.screen, "snapshot", None) is not None)
        await wait_for(pilot, lambda: app.screen.snapshot.status == "running")
        await pilot.press("c", "y")
        workers.extend(w for w in app.workers if w.group == "cancel-run")
        await pilot.press("q")

    try:
        drive(app, body)
        assert [w.state.name for w in workers] == ["CANCELLED"]  # the console did not wait for it
        assert wait_finished(run, 30)["status"] == "cancelled"  # the child process finished the cancel
    finally:
        assert reap_runs(runs) == []


def test_quit_never_stops_runs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = write_run(runs, status="running", verdict=None)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        state = json.loads((run / "state.json").read_text())
        state["supervisor_pid"] = proc.pid
        (run / "state.json").write_text(json.dumps(state))
        app = ConsoleApp(runs, open_run=run)

        async def body(pilot: Any) -> None:
            await wait_for(pilot, lambda: screen_name(app) == "MonitorScreen")
            await pilot.press("q")

        drive(app, body)
        assert app.return_code in (0, None)
        assert proc.poll() is None, "quitting the console stopped the run"
    finally:
        proc.kill()
        proc.wait()


def test_report_screen_shows_and_saves(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = write_run(runs)
    app = ConsoleApp(runs)

    async def body(pilot: Any) -> None:
        await workers_done(pilot, "home-scan")
        await pilot.press("r")
        assert screen_name(app) == "ReportScreen"
        rep = app.screen
        await workers_done(pilot, "report")
        assert "rendering" not in str(rep.query_one("#report-status").render())
        assert rep.markdown is not None and rep.markdown.startswith("Result: Pass")
        await pilot.press("s")
        assert (run / "report.md").read_text() == rep.markdown
        await pilot.press("escape")
        assert screen_name(app) == "HomeScreen"

    drive(app, body)


def test_triage_screen_opens_log_from_prompt(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "".join(f"line {i}\n" for i in range(1, 51)) + "torch.OutOfMemoryError: CUDA out of memory\n"
    )
    app = ConsoleApp(tmp_path / "runs")

    async def body(pilot: Any) -> None:
        await pilot.press("l")
        assert screen_name(app) == "PathPrompt"
        await pilot.press(*str(tmp_path / "nope.log"))
        assert "not found" in str(app.screen.query_one("#path-status").render())
        app.screen.query_one("#path").value = str(log)
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen_name(app) == "TriageScreen")
        tri = app.screen
        view = tri.query_one("#triage-log", VirtualLogView)
        await wait_for(pilot, lambda: view.line_count == 51)
        assert view.index.line(1) == "line 1"
        await workers_done(pilot, "triage")
        assert "triaging" not in str(tri.query_one("#triage-status").render())
        assert tri.result["verdict"] == "Fail"
        detail = str(tri.query_one("#triage-advice").render())
        # cause, evidence line, remedy and advice together (advice was overwritten by the evidence)
        for part in (
            "cause: GPU out of memory",
            "line 51: torch.OutOfMemoryError",
            "remedy:",
            "advice: A GPU",
        ):
            assert part in detail, part
        await pilot.press("enter")
        assert view.target == 51 and view.has_focus
        await pilot.press("escape")
        assert screen_name(app) == "HomeScreen"

    drive(app, body)


def test_leaving_triage_cancels_its_worker_and_kills_the_child(tmp_path: Path) -> None:
    import os

    import psutil

    from console.tui.screens.triage import TriageScreen

    log = tmp_path / "train.log"
    log.write_text("line 1\n")
    fifo = tmp_path / "never-written"
    os.mkfifo(fifo)  # the child blocks reading it: a triage that never ends by itself
    app = ConsoleApp(tmp_path / "runs")
    children: list[psutil.Process] = []

    def triage_children() -> list[psutil.Process]:
        return [p for p in psutil.Process().children(recursive=True) if "triage" in p.cmdline()]

    async def body(pilot: Any) -> None:
        app.push_screen(TriageScreen([log, fifo]))
        await wait_for(pilot, lambda: bool(triage_children()))
        children.extend(triage_children())
        (worker,) = [w for w in app.workers if w.group == "triage"]
        await pilot.press("escape")
        assert screen_name(app) == "HomeScreen" and worker.is_cancelled

    drive(app, body)
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert children and not alive


def test_new_run_validates_as_you_type(tmp_path: Path) -> None:
    repo = tmp_path / "nemo-rl"
    (repo / ".git").mkdir(parents=True)
    app = ConsoleApp(tmp_path / "runs")

    async def body(pilot: Any) -> None:
        await pilot.press("n")
        assert screen_name(app) == "NewRunScreen"
        scr = app.screen
        scr.query_one("#repo").value = str(tmp_path / "missing")
        await pilot.pause()
        assert scr.query_one("#repo-status").has_class("error")
        scr.query_one("#repo").value = str(repo)
        await pilot.pause()
        assert "git checkout" in str(scr.query_one("#repo-status").render())
        scr.query_one("#env").text = "GOOD=1\nnot an assignment"
        await pilot.pause()
        assert "env line 2" in str(scr.query_one("#env-status").render())
        await pilot.press("f2")  # preview: one-line error (bad env) instead of a plan
        await pilot.pause()
        assert any("env line 2" in n for n in notes(app))
        await pilot.press("escape")
        assert screen_name(app) == "HomeScreen"

    drive(app, body)


def test_help_palette_and_theme_remembered(tmp_path: Path) -> None:
    app = ConsoleApp(tmp_path / "runs")

    async def body(pilot: Any) -> None:
        assert app.theme == "dark"
        await pilot.press("question_mark")
        assert screen_name(app) == "HelpScreen"
        await pilot.press("escape")
        await pilot.press("t")
        assert app.theme == "light"
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert {"New run", "Open log for triage", "Cycle theme", "Help"} <= set(titles)
        assert "Report of selected run" in titles

    drive(app, body)
    assert json.loads(config_path().read_text())["theme"] == "light"
    again = ConsoleApp(tmp_path / "runs")

    async def check(pilot: Any) -> None:
        assert again.theme == "light"

    drive(again, check)


def test_cmd_tui_rejects_bad_input(tmp_path: Path) -> None:
    import argparse

    from console.tui.launch import cmd_tui

    with pytest.raises(RunNotFound):
        cmd_tui(argparse.Namespace(runs_dir=str(tmp_path), open_run="nope", log=None, theme=None))
    with pytest.raises(SpecError):
        cmd_tui(
            argparse.Namespace(runs_dir=str(tmp_path), open_run=None, log=str(tmp_path / "x"), theme=None)
        )


def test_finding_enter_goes_to_its_line(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    failing = write_run(runs, status="failed", verdict="Fail", failing=True)
    app = ConsoleApp(runs, open_run=failing)

    async def body(pilot: Any) -> None:
        await wait_for(pilot, lambda: screen_name(app) == "MonitorScreen")
        mon = app.screen
        await wait_for(
            pilot,
            lambda: (
                mon.query_one("#findings-table").row_count == 1
                and mon.query_one("#logview", LogView).total_lines == 41
            ),
        )
        await pilot.press("5")
        mon.query_one("#findings-table").focus()
        await pilot.press("enter")
        view = mon.query_one("#logview", LogView)
        await wait_for(pilot, lambda: view.search_text.startswith("torch.OutOfMemoryError"))
        assert mon.query_one("#tabs").active == "log"
        assert view._search_hit == 40  # the OOM line, 0-based

    drive(app, body)


def test_rerun_with_fix_starts_a_linked_run(tmp_path: Path) -> None:
    from console.runs.cancel import cancel_run

    runs = tmp_path / "runs"
    failing = write_run(runs, status="failed", verdict="Fail", failing=True)
    triage = json.loads((failing / "triage.json").read_text())
    triage["primary"]["remedy"] = {"env": {"DEMO_FIX": "1"}, "overrides": [], "unset": []}
    (failing / "triage.json").write_text(json.dumps(triage))
    app = ConsoleApp(runs, open_run=failing)
    started: list[Path] = []

    async def body(pilot: Any) -> None:
        await wait_for(
            pilot,
            lambda: (
                screen_name(app) == "MonitorScreen"
                and app.screen.snapshot is not None
                and app.screen.snapshot.triage is not None
            ),
        )
        await pilot.press("f")
        assert screen_name(app) == "ConfirmDialog"
        await pilot.press("y")
        await workers_done(pilot, "monitor-rerun")
        await wait_for(pilot, lambda: screen_name(app) == "MonitorScreen" and app.screen.run_dir != failing)
        started.append(app.screen.run_dir)

    try:
        drive(app, body)
        new = started[0]
        state = json.loads((new / "state.json").read_text())
        assert state["linked_from"] == failing.name
        spec = json.loads((new / "spec.json").read_text())
        assert spec["env"].get("DEMO_FIX") == "1"
    finally:
        for run in started:
            cancel_run(run, 2.0)


def test_new_run_touched_areas_preview_preflight_launch(tmp_path: Path) -> None:
    from console.plan import recommend_levels, touched_areas
    from console.runs.cancel import cancel_run

    runs = tmp_path / "runs"
    app = ConsoleApp(runs)
    started: list[Path] = []

    async def body(pilot: Any) -> None:
        await pilot.press("n")
        scr = app.screen
        scr.query_one("#framework").value = "nemo-rl"
        await pilot.pause()
        levels = scr.query_one("#levels")
        assert levels.option_count >= 2  # the catalog's levels, with "required when"/"proves"
        area = touched_areas()[0][0]
        scr.query_one("#touched").select(area)
        await pilot.pause()
        assert sorted(levels.selected) == recommend_levels("nemo-rl", [area])
        scr.query_one("#framework").value = "demo"
        await pilot.pause()
        await pilot.press("f2")
        await workers_done(pilot, "newrun-task")
        assert scr.plan is not None
        preview = str(scr.query_one("#preview").render())
        assert "Commands that will run" in preview and "console.demo.grpo" in preview
        await pilot.press("f3")
        await workers_done(pilot, "newrun-task")
        assert "Preflight:" in str(scr.query_one("#preflight-out").render())
        await pilot.press("ctrl+l")
        await workers_done(pilot, "newrun-task")
        await wait_for(pilot, lambda: screen_name(app) == "MonitorScreen")
        started.append(app.screen.run_dir)
        assert (app.screen.run_dir / "doctor.json").is_file()

    try:
        drive(app, body)
    finally:
        for run in started:
            cancel_run(run, 2.0)
