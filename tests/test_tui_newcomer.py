"""The newcomer's path through the console (issue 15): guided New run, triage that explains,
80x24 footer and verdict banner, notifications, metric plots, and the CLI's help and fallbacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tui_helpers import drive, text_of, wait_for, workers_done, write_run  # noqa: E402

from console.plan import catalog_levels, recommend_levels  # noqa: E402
from console.tui.app import ConsoleApp  # noqa: E402
from console.tui.notify import Change, StateWatcher, announce, osc9  # noqa: E402
from console.tui.rundata import list_runs  # noqa: E402
from console.tui.statusline import segment  # noqa: E402

pytestmark = pytest.mark.timeout(90)
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("TMUX", raising=False)


# -- New run: a guided flow ------------------------------------------------------------------------
def test_new_run_walk_shows_why_for_every_level_and_variant(tmp_path: Path) -> None:
    app = ConsoleApp(tmp_path / "runs")

    async def body(pilot: Any) -> None:
        await pilot.press("n")
        scr = app.screen
        touched = scr.query_one("#touched")
        assert touched.has_focus  # the first question is the first thing the newcomer answers
        await pilot.press("down")
        assert "needs on demo" in text_of(scr.query_one("#guide"))
        scr.query_one("#framework").value = "nemo-rl"
        await pilot.pause()
        touched.focus()
        touched.select("weight-mapping-refit")
        await pilot.pause()
        levels = scr.query_one("#levels")
        assert sorted(levels.selected) == recommend_levels("nemo-rl", ["weight-mapping-refit"]) == [0, 2]
        assert "recommended for what you ticked: Level 0, Level 2" in text_of(scr.query_one("#levels-status"))
        levels.focus()
        await pilot.pause()
        for i, info in enumerate(catalog_levels("nemo-rl")):  # every level: required when + proves
            levels.highlighted = i
            await pilot.pause()
            guide = text_of(scr.query_one("#guide"))
            assert f"Level {info.number}: {info.title}" in guide
            assert "required when: " + info.required_when[:30] in guide
            assert "proves: " + info.proves[:30] in guide
        variants = scr.query_one("#variants")
        names = [variants.get_option_at_index(i).value for i in range(variants.option_count)]
        assert "delta-compression" in names and "vlm" in names  # choices from the catalog, not free text
        variants.focus()
        variants.highlighted = names.index("delta-compression")
        await pilot.pause()
        guide = text_of(scr.query_one("#guide"))
        assert "Variant delta-compression: Delta-compressed weight transfer" in guide and "proves:" in guide
        variants.select("vlm")  # belongs to Level 5, which is not ticked
        await pilot.pause()
        status = text_of(scr.query_one("#variants-status"))
        assert status.startswith("Variant vlm belongs to Level 5: tick that level")
        await pilot.press("f2")
        await pilot.pause()
        assert "--variant" not in text_of(scr.query_one("#guide"))
        assert "Variant vlm belongs to Level 5" in text_of(scr.query_one("#guide"))
        variants.deselect("vlm")
        levels.select(5)  # Level 5 runs only with a variant: said in the screen's words
        await pilot.pause()
        assert (
            "Level 5 runs only with a variant: tick one of vlm, audio, eagle-mtp under Variants"
            in text_of(scr.query_one("#variants-status"))
        )

    drive(app, body)


def test_new_run_builds_the_cli_spec_with_slurm_hang_timeout_and_bridge_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New run has `run`'s Slurm options, hang timeout and Bridge tests, and builds its spec with the
    CLI's own builder: the same fields give the same spec.json as the command line."""
    from console.cli import build_parser
    from console.spec import spec_from_args

    monkeypatch.delenv("BRIDGE_REPO", raising=False)
    runs = tmp_path / "runs"
    app = ConsoleApp(runs)

    async def body(pilot: Any) -> None:
        await pilot.press("n")
        scr = app.screen
        assert not scr.query_one("#slurm-fields").display  # local by default: no Slurm questions
        scr.query_one("#launcher").value = "slurm"
        await pilot.pause(0.1)
        assert scr.query_one("#slurm-fields").display
        fields = {"nodes": "2", "partition": "batch", "time": "01:30:00", "mounts": "/data:/data,/m:/m"}
        for key, value in fields.items():
            scr.query_one(f"#{key}").value = value
        scr.query_one("#hang_timeout").value = "600"
        scr.query_one("#bridge_tests").text = "tests/functional_tests/test_a.py\n\n tests/test_b.py\n"
        scr.query_one("#env").text = "DEMO_X=1"
        await pilot.pause(0.1)
        spec = scr.build_spec()
        cli = spec_from_args(
            build_parser().parse_args(
                ["run", "--launcher", "slurm", "--nodes", "2", "--partition", "batch", "--time", "01:30:00"]
                + ["--mounts", "/data:/data,/m:/m", "--hang-timeout", "600", "--env", "DEMO_X=1"]
                + ["--bridge-test", "tests/functional_tests/test_a.py", "--bridge-test", "tests/test_b.py"]
                + ["--runs-dir", str(runs)]
            )
        )
        assert spec.to_dict() == cli.to_dict()
        assert spec.slurm.nodes == 2 and spec.slurm.mounts == ["/data:/data", "/m:/m"]
        assert spec.extra == {"bridge_tests": ["tests/functional_tests/test_a.py", "tests/test_b.py"]} | {
            "hang_timeout_s": 600.0
        }
        scr.query_one("#hang_timeout").value = "0"  # a bad value: the core's one line, in the form's words
        await pilot.press("f2")
        await wait_for(
            pilot, lambda: "Hang timeout 0: must be a positive" in text_of(scr.query_one("#guide"))
        )
        assert "--hang-timeout" not in text_of(scr.query_one("#guide")) and scr.plan is None
        scr.query_one("#hang_timeout").value = ""
        scr.query_one("#launcher").value = "local"
        await pilot.pause(0.1)
        assert not scr.query_one("#slurm-fields").display
        spec = scr.build_spec()
        assert spec.launcher == "local" and spec.slurm.nodes == 1 and "hang_timeout_s" not in spec.extra

    drive(app, body)


def test_preview_and_preflight_come_into_view(tmp_path: Path) -> None:
    app = ConsoleApp(tmp_path / "runs")

    async def body(pilot: Any) -> None:
        await pilot.press("n")
        scr = app.screen
        form = scr.query_one("#newrun-form")
        await pilot.press("f3")
        await workers_done(pilot, "newrun-task")
        assert "Preflight:" in text_of(scr.query_one("#preflight-out"))
        await pilot.pause()  # the scroll into view comes after a refresh
        out = scr.query_one("#preflight-out")
        top = out.region.y
        assert form.region.y <= top < form.region.bottom  # on screen, not below the fold
        assert "Preflight:" in text_of(scr.query_one("#guide"))

    drive(app, body)


def test_start_anyway_after_a_blocking_preflight_is_recorded(tmp_path: Path) -> None:
    from console.report import render_markdown
    from console.runs.cancel import cancel_run

    runs = tmp_path / "runs"
    app = ConsoleApp(runs)
    started: list[Path] = []

    async def body(pilot: Any) -> None:
        await pilot.press("n")
        scr = app.screen
        scr.query_one("#env").text = "ROCR_VISIBLE_DEVICES=0\nCUDA_VISIBLE_DEVICES=1"  # a real clash: blocks
        await pilot.press("ctrl+l")
        await workers_done(pilot, "newrun-task")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmDialog")
        assert "Start anyway?" in str(app.screen.question)
        assert "Preflight: block" in text_of(scr.query_one("#preflight-out"))
        await pilot.press("y")
        await workers_done(pilot, "newrun-task")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "MonitorScreen")
        started.append(app.screen.run_dir)

    try:
        drive(app, body)
        run = started[0]
        spec = json.loads((run / "spec.json").read_text())
        override = spec["extra"]["preflight_override"]
        assert override["verdict"] == "block" and override["checks"]
        assert json.loads((run / "doctor.json").read_text())["verdict"] == "block"
        report = render_markdown(run)
        assert "- Start anyway: started anyway by the user although the preflight blocked it" in report
    finally:
        for run in started:
            cancel_run(run, 2.0)


# -- Findings and the verdict banner ---------------------------------------------------------------
def test_findings_detail_and_verdict_banner(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = write_run(runs, "20261121-223700-demo-l0-nan", status="failed", verdict="Fail", failing=True)
    app = ConsoleApp(runs, open_run=run)

    async def body(pilot: Any) -> None:
        await wait_for(pilot, lambda: type(app.screen).__name__ == "MonitorScreen")
        scr = app.screen
        await wait_for(pilot, lambda: scr.query_one("#findings-table").row_count == 1)
        banner = scr.query_one("#verdict-banner")
        assert banner.display and banner.has_class("bad")
        assert "next: r report · f rerun with fix · q quit" in text_of(banner)
        await pilot.press("5")
        detail = text_of(scr.query_one("#finding-detail"))
        for part in (
            "cause: GPU out of memory",
            "line 41: torch.OutOfMemoryError",
            "remedy: policy.train_micro_batch_size=1",
            "advice: Lower the micro batch size.",
        ):
            assert part in detail

    drive(app, body)


def footer_misses(app: ConsoleApp, actions: tuple[str, ...], width: int = 80) -> list[str]:
    """The actions whose footer key is absent, not laid out yet, or past the right edge."""
    keys = [k for k in app.screen.query("FooterKey") if k.is_attached]
    missing = []
    for action in actions:
        key = next((k for k in keys if str(k.action).split(".")[-1] == action), None)
        if key is None or key.region.width == 0 or key.region.right > width:
            missing.append(f"{action}: {None if key is None else key.region}")
    return missing


async def footer_shows(pilot: Any, actions: tuple[str, ...], width: int = 80) -> None:
    """Waits for the footer of the screen on top (it recomposes after a refresh when the bindings
    change, so right after a screen opens its keys may not be laid out yet), then checks it."""
    app = pilot.app
    try:
        await wait_for(pilot, lambda: not footer_misses(app, actions, width))
    except AssertionError:
        raise AssertionError(
            f"{type(app.screen).__name__} footer at {width} columns: {footer_misses(app, actions, width)}"
        ) from None


APP_KEYS = ("quit", "help", "cycle_theme")


def test_footer_keeps_quit_help_report_theme_at_80_columns(tmp_path: Path) -> None:
    """q ? t (and r where the screen has a report) at 80x24 on every screen with a footer."""
    from console.tui.screens.compare import CompareScreen

    runs = tmp_path / "runs"
    run = write_run(runs)
    other = write_run(runs, "20261121-224500-demo-l0")
    app = ConsoleApp(runs, open_run=run)

    async def body(pilot: Any) -> None:
        await wait_for(pilot, lambda: type(app.screen).__name__ == "MonitorScreen")
        await footer_shows(pilot, (*APP_KEYS, "report"))
        await pilot.press("r")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ReportScreen")
        await footer_shows(pilot, APP_KEYS)
        await pilot.press("escape", "escape")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "HomeScreen")
        await footer_shows(pilot, (*APP_KEYS, "report"))
        await pilot.press("n")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "NewRunScreen")
        await footer_shows(pilot, APP_KEYS)
        await pilot.press("escape")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "HomeScreen")
        app.push_screen(CompareScreen(run, other))
        await wait_for(pilot, lambda: type(app.screen).__name__ == "CompareScreen")
        await footer_shows(pilot, APP_KEYS)

    drive(app, body)
    log_app = ConsoleApp(runs, open_log=run / "logs" / "01-demo-grpo.log")

    async def triage(pilot: Any) -> None:
        await wait_for(pilot, lambda: type(log_app.screen).__name__ == "TriageScreen")
        await footer_shows(pilot, APP_KEYS)

    drive(log_app, triage)


def test_metrics_nan_series_and_plot_only_when_big(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = write_run(runs)
    with open(run / "events.jsonl", "a") as fh:
        fh.write(
            json.dumps({"t": 1.0, "type": "metrics", "step": 21, "values": {"loss": float("nan")}}) + "\n"
        )
    for size, plotted in (((80, 24), False), ((160, 48), True)):
        app = ConsoleApp(runs, open_run=run)

        async def body(pilot: Any, plotted: bool = plotted, app: ConsoleApp = app) -> None:
            await wait_for(pilot, lambda: type(app.screen).__name__ == "MonitorScreen")
            await pilot.press("3")
            await wait_for(pilot, lambda: bool(app.screen._metric_names))
            await pilot.pause()
            assert app.screen.query_one("#metric-plot").display is plotted
            labels = " ".join(text_of(w) for w in app.screen.query(".metric-label"))
            assert "NaN/Inf from step 21" in labels  # said, and the sparkline does not crash on it

        drive(app, body, size=size)


# -- notifications and the tmux status segment -----------------------------------------------------
def test_state_changes_are_announced_on_each_enabled_channel(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = write_run(runs, status="running", verdict=None)
    app = ConsoleApp(runs)

    async def body(pilot: Any) -> None:
        await workers_done(pilot, "app-watch-runs")  # the first look only learns the states
        assert app.announced == []
        state = json.loads((run / "state.json").read_text())
        state.update(status="failed", verdict="Fail")
        (run / "state.json").write_text(json.dumps(state))
        await wait_for(pilot, lambda: bool(app.announced), timeout=5)
        message, channels = app.announced[0]
        assert message == f"rl-console: run {run.name} failed (Fail)"
        assert channels == ["bell", "osc9"]  # tmux only inside tmux ($TMUX unset here)
        app.toggle_notify("bell")

    drive(app, body)
    written: list[str] = []
    from console.tui.config import load_config
    from console.tui.notify import settings

    enabled = settings(load_config())
    assert enabled == {"bell": False, "tmux": True, "osc9": True}  # remembered
    used = announce(Change("r1", "running", "passed", "Pass"), enabled, written.append)
    assert used == ["osc9"] and written == [osc9("rl-console: run r1 passed (Pass)")]
    assert written[0].startswith("\x1b]9;") and written[0].endswith("\x07")


def test_watcher_and_status_segment(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    write_run(runs, "20261121-223600-demo-l0", status="passed", verdict="Pass")
    watcher = StateWatcher()
    assert watcher.changes(list_runs(runs)) == []
    assert segment(list_runs(runs), tmux=True) == "rl #[fg=green]ok demo-l0#[default]"
    live = write_run(runs, "20261121-223900-demo-l0-nan", status="running", verdict=None, created=2e9)
    changes = watcher.changes(list_runs(runs))
    assert [(c.run_id, c.new) for c in changes] == [(live.name, "running")]
    assert segment(list_runs(runs)) == "rl ▶ demo-l0-nan 1/1 · it 20/20"
    out = subprocess.run(
        [sys.executable, "-m", "console", "status", "--tmux", "--runs-dir", str(runs)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.stdout.strip() == "#[fg=cyan]rl ▶ demo-l0-nan 1/1 · it 20/20#[default]"


# -- CLI --------------------------------------------------------------------------------------------
def rl(*args: str, runs: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if runs is not None:
        env["RL_CONSOLE_RUNS"] = str(runs)
    return subprocess.run(
        [sys.executable, "-m", "console", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_cli_version_descriptions_and_catalog_in_help() -> None:
    from console import __version__
    from console.cli import build_parser

    assert rl("--version").stdout.strip() == f"rl-console {__version__}"
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, sp in sub.choices.items():
        assert sp.description, f"{name} --help has no description"
    plan_help = rl("plan", "--help").stdout
    assert "\nprint the steps (argv, env, cwd) without running\n" in plan_help
    for line in (
        "--level 2  Non-colocated vLLM refit",
        "--variant delta-compression  (Level 2)",
        "--variant nan  (Level 0) Inject a NaN loss",
    ):
        assert line in plan_help, line
    assert "--variant enforce-eager" in rl("run", "--help").stdout


def test_tui_and_demo_fall_back_to_headless_without_a_terminal(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    write_run(runs)
    out = rl(runs=runs)
    assert out.returncode == 0 and "\x1b[" not in out.stdout
    assert "20261121-223600-demo-l0" in out.stdout and "stdout is not a terminal" in out.stderr
    demo = rl("demo", runs=runs, timeout=240)
    assert "\x1b[" not in demo.stdout
    assert demo.stdout.rstrip().splitlines()[-1] == "Verdict: Pass" or "Verdict: Pass" in demo.stdout
    assert demo.returncode == 0


def test_doctor_says_it_is_running(tmp_path: Path) -> None:
    out = rl("doctor", "--framework", "demo", "--runs-dir", str(tmp_path))
    assert out.stderr.startswith("doctor: running preflight checks...\n")
    assert "doctor: running preflight checks: done in " in out.stderr
    assert "verdict:" in out.stdout


def test_sample_logs_replay_by_name_and_triage(tmp_path: Path) -> None:
    samples = ROOT / "console" / "demo" / "samples"
    nemo = rl("triage", str(samples / "nemo-rl-grpo-megatron.log"), "--json")
    data = json.loads(nemo.stdout)
    assert data["verdict"] == "Pass" and data["framework"] == "nemo-rl" and data["progress"]["step"] == 4
    verl = json.loads(rl("triage", str(samples / "verl-ppo-megatron-oom.log"), "--json").stdout)
    assert verl["framework"] == "verl" and verl["primary"]["class"] == "cuda_oom"
    out = rl(
        "replay",
        "verl-ppo-megatron-oom.log",
        "--speed",
        "200",
        "--headless",
        "--runs-dir",
        str(tmp_path),
        timeout=120,
    )
    assert "cuda_oom" in out.stdout + out.stderr and out.returncode == 1


def test_finding_early_in_a_big_log_opens_the_whole_file_at_its_line(tmp_path: Path) -> None:
    """The monitor's live view holds the log's tail; enter on a finding before it opens the
    virtual view of the whole file at that line (was: "evidence line not in the loaded part")."""
    from console.tui.logfollow import INITIAL_TAIL

    runs = tmp_path / "runs"
    run = write_run(runs, status="failed", verdict="Fail")
    log = run / "logs" / "01-demo-grpo.log"
    head = [f"step {i}/20" for i in range(1, 10)] + ["torch.OutOfMemoryError: CUDA out of memory (early)"]
    filler = "".join(f"filler line {i} {'x' * 60}\n" for i in range(INITIAL_TAIL // 40))
    log.write_text("\n".join(head) + "\n" + filler)
    with open(run / "events.jsonl", "a") as fh:
        fh.write(
            json.dumps(
                {
                    "t": 2.0,
                    "type": "finding",
                    "step": "demo-grpo",
                    "class": "cuda_oom",
                    "verdict": "Fail",
                    "line": 10,
                    "evidence": "torch.OutOfMemoryError: CUDA out of memory (early)",
                }
            )
            + "\n"
        )
    app = ConsoleApp(runs, open_run=run)

    async def body(pilot: Any) -> None:
        await wait_for(pilot, lambda: type(app.screen).__name__ == "MonitorScreen")
        scr = app.screen
        await wait_for(pilot, lambda: scr.query_one("#findings-table").row_count >= 1)
        await pilot.press("5")
        scr.query_one("#findings-table").focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "TriageScreen", timeout=10)
        view = app.screen.query_one("#triage-log")
        await wait_for(pilot, lambda: view.target == 10 and view.line_count >= 10)
        await pilot.pause()
        assert view.scroll_offset.y <= 9 < view.scroll_offset.y + view.size.height
        assert "OutOfMemoryError" in view.index.line(10)

    drive(app, body)
