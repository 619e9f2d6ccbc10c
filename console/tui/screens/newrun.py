"""New run: framework, levels, touched-areas questions, variants, model, repos, overrides, env,
preflight, a preview of the exact commands, and launch. All validation comes from the plan builder."""

from __future__ import annotations

import contextlib
import os
import shlex
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, Header, Input, Label, Select, SelectionList, Static, TextArea

from console.redact import redact_env
from console.spec import FRAMEWORKS, RunSpec
from console.tui import backend
from console.tui.messages import TaskDone


def _field(item: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        if isinstance(item, dict) and name in item:
            return item[name]
        if hasattr(item, name):
            return getattr(item, name)
    return default


def check_repo(value: str) -> tuple[bool, str]:
    """Validate a repo path as the user types: (ok, one-line message)."""
    if not value.strip():
        return True, "not set (uses the environment default, if any)"
    path = Path(value.strip()).expanduser()
    if not path.exists():
        return False, f"not found: {path}"
    if not path.is_dir():
        return False, f"not a directory: {path}"
    if not (path / ".git").exists():
        return True, f"ok, but not a git checkout: {path}"
    return True, f"ok: git checkout {path}"


def parse_env(text: str) -> tuple[dict[str, str], str | None]:
    env: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line or not line.split("=", 1)[0].strip():
            return env, f"env line {n}: expected KEY=VALUE"
        key, value = line.split("=", 1)
        env[key.strip()] = value
    return env, None


class NewRunScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("f2", "preview", "Preview", key_display="F2"),
        Binding("f3", "preflight", "Preflight", key_display="F3"),
        Binding("ctrl+l", "launch", "Launch"),
    ]

    def __init__(self, runs_dir: Path) -> None:
        super().__init__()
        self.runs_dir = runs_dir
        self.levels: list[Any] = []
        self.plan: Any = None

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="newrun-form"):
            yield Label("Framework", classes="field")
            yield Select([(f, f) for f in FRAMEWORKS], value="demo", allow_blank=False, id="framework")
            yield Label("What did your change touch? (ticks the recommended levels)", classes="field")
            yield SelectionList[str](id="touched")
            yield Label("Levels", classes="field")
            yield SelectionList[int](id="levels")
            yield Static("", markup=False, id="levels-status", classes="field-hint")
            yield Label("Variants (comma separated)", classes="field")
            yield Input(placeholder="e.g. nan", id="variants")
            yield Label("Model (HF id or local path)", classes="field")
            yield Input(placeholder="e.g. Qwen/Qwen3-0.6B", id="model")
            yield Label("Megatron-Bridge checkout", classes="field")
            yield Input(value=os.environ.get("BRIDGE_REPO", ""), placeholder="$BRIDGE_REPO", id="bridge_repo")
            yield Static("", markup=False, id="bridge_repo-status", classes="field-hint")
            yield Label("NeMo-RL / verl checkout", classes="field")
            yield Input(placeholder="$NEMO_RL_REPO or $VERL_REPO", id="repo")
            yield Static("", markup=False, id="repo-status", classes="field-hint")
            yield Label("Overrides (Hydra KEY=VALUE, one per line)", classes="field")
            yield TextArea("", id="overrides")
            yield Static("", markup=False, id="overrides-status", classes="field-hint")
            yield Label("Environment (KEY=VALUE, one per line)", classes="field")
            yield TextArea("", id="env")
            yield Static("", markup=False, id="env-status", classes="field-hint")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Preview F2", id="preview")
                yield Button("Preflight F3", id="preflight")
                yield Button("Launch ctrl+l", id="launch", variant="success")
            yield Static("", markup=False, id="preflight-out")
            yield Static("", markup=False, id="preview")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "new run"
        self._load_catalog("demo")
        for name in ("bridge_repo", "repo"):
            self._validate_repo(name, self.query_one(f"#{name}", Input).value)
        self.query_one("#framework", Select).focus()

    # -- catalog -----------------------------------------------------------------------------
    def _load_catalog(self, framework: str) -> None:
        levels_list = self.query_one("#levels", SelectionList)
        touched = self.query_one("#touched", SelectionList)
        levels_list.clear_options()
        touched.clear_options()
        status = self.query_one("#levels-status", Static)
        try:
            self.levels = list(backend.catalog_levels(framework))
        except Exception as exc:  # noqa: BLE001 - show why, keep the form usable
            self.levels = []
            status.update(Text(f"levels unavailable: {exc}", style="red"))
            return
        status.update("")
        for item in self.levels:
            number = int(_field(item, "level", "number", default=0))
            title = _field(item, "title", "name", default=f"Level {number}")
            when = _field(item, "required_when", "when", default="")
            proves = _field(item, "proves", default="")
            prompt = Text(f"L{number} {title}", style="bold")
            if when:
                prompt.append(f"\n   required when: {when}", style="dim")
            if proves:
                prompt.append(f"\n   proves: {proves}", style="dim")
            levels_list.add_option((prompt, number, number == 0))
        try:
            questions = backend.touched_areas()
        except Exception:  # noqa: BLE001 - no questions in this catalog
            questions = []
        for key, label in questions:
            touched.add_option((str(label), str(key)))
        touched.display = bool(questions)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "framework" and isinstance(event.value, str):
            self._load_catalog(event.value)
            self.plan = None

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged) -> None:
        if event.selection_list.id != "touched":
            return
        framework = str(self.query_one("#framework", Select).value)
        try:
            wanted = set(backend.recommend_levels(framework, list(event.selection_list.selected)))
        except Exception as exc:  # noqa: BLE001
            self.notify(f"no recommendation: {exc}", severity="warning")
            return
        levels = self.query_one("#levels", SelectionList)
        for number in wanted:
            try:
                levels.select(int(number))
            except Exception:  # noqa: BLE001 - a level this catalog lacks
                continue
        self.query_one("#levels-status", Static).update(f"recommended: {sorted(wanted)}")

    # -- validation as you type --------------------------------------------------------------
    def _validate_repo(self, name: str, value: str) -> None:
        ok, msg = check_repo(value)
        label = self.query_one(f"#{name}-status", Static)
        label.update(msg)
        label.set_class(not ok, "error")
        label.set_class(ok and bool(value.strip()), "ok")

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id in ("bridge_repo", "repo"):
            self._validate_repo(event.input.id, event.value)
        self.plan = None

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        self.plan = None
        if event.text_area.id == "env":
            _, err = parse_env(event.text_area.text)
            status = self.query_one("#env-status", Static)
            status.update(err or "")
            status.set_class(bool(err), "error")
        elif event.text_area.id == "overrides":
            self.check_overrides(self._overrides(), self.query_one("#repo", Input).value or None)

    @work(thread=True, exclusive=True, group="newrun-overrides")
    def check_overrides(self, overrides: list[str], repo: str | None) -> None:
        try:
            result = backend.validate_overrides(overrides, repo=repo)
        except Exception as exc:  # noqa: BLE001 - the one-line SpecError is the message
            self.post_message(TaskDone("overrides", error=str(exc)))
            return
        self.post_message(TaskDone("overrides", result))

    # -- spec --------------------------------------------------------------------------------
    def _overrides(self) -> list[str]:
        return [ln.strip() for ln in self.query_one("#overrides", TextArea).text.splitlines() if ln.strip()]

    def build_spec(self) -> RunSpec:
        from console.errors import SpecError

        env, err = parse_env(self.query_one("#env", TextArea).text)
        if err:
            raise SpecError(err)
        variants = [v.strip() for v in self.query_one("#variants", Input).value.split(",") if v.strip()]
        levels = sorted(self.query_one("#levels", SelectionList).selected) or [0]
        framework = str(self.query_one("#framework", Select).value)
        bridge = self.query_one("#bridge_repo", Input).value.strip() or None
        repo = self.query_one("#repo", Input).value.strip() or None
        if repo is None and framework == "nemo-rl":
            repo = os.environ.get("NEMO_RL_REPO")
        elif repo is None and framework == "verl":
            repo = os.environ.get("VERL_REPO")
        return RunSpec(framework=framework, levels=levels, variants=variants,
                       model=self.query_one("#model", Input).value.strip() or None,
                       bridge_repo=bridge if framework != "demo" else None, repo=repo,
                       overrides=self._overrides(), env=env, runs_dir=str(self.runs_dir))

    # -- actions -----------------------------------------------------------------------------
    def on_button_pressed(self, event: Button.Pressed) -> None:
        {"preview": self.action_preview, "preflight": self.action_preflight,
         "launch": self.action_launch}[str(event.button.id)]()

    def _spec_or_error(self) -> RunSpec | None:
        try:
            return self.build_spec()
        except Exception as exc:  # noqa: BLE001
            self.notify(str(exc), severity="error")
            return None

    def action_preview(self) -> None:
        spec = self._spec_or_error()
        if spec is not None:
            self.run_task("preview", spec)

    def action_preflight(self) -> None:
        spec = self._spec_or_error()
        if spec is not None:
            self.query_one("#preflight-out", Static).update("running preflight checks...")
            self.run_task("preflight", spec)

    def action_launch(self) -> None:
        spec = self._spec_or_error()
        if spec is not None:
            self.notify("launching...")
            self.run_task("launch", spec)

    @work(thread=True, exclusive=True, group="newrun-task")
    def run_task(self, kind: str, spec: RunSpec) -> None:
        from console.errors import SpecError

        try:
            plan = backend.build_plan(spec)
            if kind == "preview":
                result: Any = plan
            elif kind == "preflight":
                result = (plan, backend.run_doctor(spec, plan))
            else:
                doctor, blocked = backend.preflight_blocks(spec, plan)
                if blocked:
                    self.post_message(TaskDone("preflight", (plan, doctor)))
                    raise SpecError("preflight checks block this run: see the results above the preview "
                                    "(or start it from the CLI with --no-doctor)")
                result = backend.start_run(spec, plan)
                with contextlib.suppress(OSError, backend.BackendMissing):
                    backend.write_doctor_json(result, doctor)
        except Exception as exc:  # noqa: BLE001 - SpecError and back-end errors: one line
            self.post_message(TaskDone(kind, error=str(exc)))
            return
        self.post_message(TaskDone(kind, result))

    def on_task_done(self, message: TaskDone) -> None:
        if message.kind == "overrides":
            status = self.query_one("#overrides-status", Static)
            status.update(message.error or ("ok" if self._overrides() else ""))
            status.set_class(bool(message.error), "error")
            return
        if message.error:
            self.notify(f"{message.kind}: {message.error}", severity="error", timeout=8)
            if message.kind == "preflight":
                self.query_one("#preflight-out", Static).update(Text(message.error, style="red"))
            return
        if message.kind == "preview":
            self.plan = message.result
            self.query_one("#preview", Static).update(render_preview(message.result))
            self.query_one("#newrun-form", VerticalScroll).scroll_end(animate=False)
        elif message.kind == "preflight":
            self.plan, doctor = message.result
            self.query_one("#preflight-out", Static).update(render_doctor(doctor))
        elif message.kind == "launch":
            run_dir = Path(message.result)
            self.notify(f"started {run_dir.name} (it keeps running if you quit)")
            self.app.switch_screen(_monitor(run_dir))


def _monitor(run_dir: Path) -> Screen[None]:
    from console.tui.screens.monitor import MonitorScreen

    return MonitorScreen(run_dir)


def render_preview(plan: Any) -> Text:
    data = plan.to_dict() if hasattr(plan, "to_dict") else dict(plan)
    text = Text()
    text.append("Commands that will run\n", style="bold")
    for w in data.get("warnings") or []:
        text.append(f"! {w}\n", style="yellow")
    if "{run_dir}" in str(data.get("steps")):
        text.append("{run_dir} is the run's own folder, created at launch\n", style="dim")
    for i, step in enumerate(data.get("steps") or [], 1):
        text.append(f"{i}. {step.get('title') or step.get('name')}", style="bold")
        if step.get("gpus"):
            text.append(f"  ({step['gpus']} GPU)")
        text.append(f"\n   cd {shlex.quote(str(step.get('cwd') or '.'))}\n")
        for key, value in redact_env(step.get("env") or {}).items():
            text.append(f"   export {key}={shlex.quote(str(value))}\n", style="dim")
        for key in step.get("unset") or []:
            text.append(f"   unset {key}\n", style="dim")
        text.append(f"   {shlex.join(str(a) for a in step.get('argv') or [])}\n", style="cyan")
        if step.get("proves"):
            text.append(f"   proves: {step['proves']}\n", style="dim")
    return text


def render_doctor(doctor: dict[str, Any]) -> Text:
    text = Text()
    text.append(f"Preflight: {doctor.get('verdict')}\n", style="bold")
    styles = {"ok": "green", "warn": "yellow", "block": "bold red", "skip": "dim"}
    for check in doctor.get("checks") or []:
        status = str(check.get("status") or "?")
        text.append(f"  {status:>5} ", style=styles.get(status.lower(), ""))
        text.append(f"{check.get('id')}: {check.get('evidence') or ''}\n")
        if check.get("advice") and status.lower() != "ok":
            text.append(f"        {check['advice']}\n", style="dim")
    return text
