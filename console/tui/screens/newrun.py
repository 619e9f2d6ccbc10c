"""New run: framework, levels, touched-areas questions, variants, model, repos, overrides, env,
preflight, a preview of the exact commands, and launch. All validation comes from the plan builder."""

from __future__ import annotations

import contextlib
import os
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalGroup, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Header, Input, Label, Select, SelectionList, Static, TextArea

from console.commandtext import command_line
from console.errors import SpecError
from console.redact import redact_text
from console.spec import FRAMEWORKS, LAUNCHERS, RunSpec, make_spec
from console.tui import backend
from console.tui.messages import TaskDone, task_done
from console.tui.screens.dialogs import ConfirmDialog
from console.tui.widgets.footer import ConsoleFooter

if TYPE_CHECKING:  # console.plan imports Hydra: the screen gets it through backend, when used
    from console.catalog import Variant
    from console.plan import LevelInfo, Plan


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


GUIDE_START = (
    "Step 1 of 4: tick what your change touched (space); the levels it needs get ticked "
    "for you. This guide explains each level as you move over it."
)
FLAG_WORDS = (
    ("--bridge-repo", "Megatron-Bridge checkout"),
    ("--variant", "Variants"),
    ("--level", "Levels"),
    ("--override", "Overrides"),
    ("--env", "Environment"),
    ("--model", "Model"),
    ("--repo", "NeMo-RL / verl checkout"),
    ("--hang-timeout", "Hang timeout"),
    ("--gpus-per-node", "GPUs per node"),
    ("--cpus-per-task", "CPUs per task"),
    ("--nodes", "Nodes"),
)
FIELD_GUIDES = {
    "model": "Model: a Hugging Face id or a local path. Empty: each step's default.",
    "bridge_repo": "Your Megatron-Bridge checkout (the change under test).",
    "repo": "The NeMo-RL or verl checkout the procedure runs in.",
    "overrides": "Hydra overrides, one KEY=VALUE per line, checked against the config.",
    "env": "Extra environment, one KEY=VALUE per line (secrets never reach files).",
    "bridge_tests": "Extra Bridge test files for your model, run with the Bridge checks.",
    "hang_timeout": "A run with no training progress for this long is reported as a hang.",
    "launcher": "local runs here, detached; slurm submits the same steps with sbatch.",
}
# The Slurm options of `rl-console run` (id, label, placeholder, Input type), shown for slurm.
SLURM_INPUTS = (
    ("nodes", "Nodes", "1", "integer"),
    ("partition", "Partition", "the cluster's default", "text"),
    ("account", "Account", "the cluster's default", "text"),
    ("time", "Time limit", "the partition's, e.g. 02:00:00", "text"),
    ("container", "Container image (pyxis)", "none: the node's own environment", "text"),
    ("mounts", "Container mounts", "SRC:DST,...", "text"),
    ("gpus_per_node", "GPUs per node", "what the steps need", "integer"),
    ("cpus_per_task", "CPUs per task", "the cluster's default, often 1", "integer"),
)
FIELD_GUIDES |= {
    key: f"Slurm: {label}, as `rl-console run --{key.replace('_', '-')}`." for key, label, *_ in SLURM_INPUTS
}


def in_console_words(message: str) -> str:
    """A core error (written for the CLI's flags) in the names of this screen's fields."""
    for flag, field in FLAG_WORDS:
        message = message.replace(flag, field)
    return message


def check_choice(
    levels: list[int], variants: list[str], need_variant: set[int], variant_info: list[Variant]
) -> str | None:
    """The level/variant rules of the plan builder, said for this screen; None when consistent."""
    by_name = {v.name: v for v in variant_info}
    for name in variants:
        v = by_name.get(name)
        if v is not None and not set(v.levels) & set(levels):
            wanted = " or ".join(f"Level {n}" for n in v.levels)
            return f"Variant {name} belongs to {wanted}: tick that level under Levels, or untick {name}."
    for number in sorted(need_variant & set(levels)):
        choices = [v.name for v in variant_info if number in v.levels]
        if not any(name in choices for name in variants):
            return (
                f"Level {number} runs only with a variant: tick one of {', '.join(choices)} "
                f"under Variants (the guide shows what each proves)."
            )
    return None


class NewRunScreen(Screen[None]):
    """A guided form: what changed -> levels (with why) -> variants (with meaning) -> preflight -> launch."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("f2", "task('preview')", "Preview", key_display="F2"),
        Binding("f3", "task('preflight')", "Preflight", key_display="F3"),
        Binding("ctrl+l", "task('launch')", "Launch"),
    ]

    def __init__(self, runs_dir: Path) -> None:
        super().__init__()
        self.runs_dir = runs_dir
        self.levels: list[LevelInfo] = []
        self.variant_info: list[Variant] = []
        self.need_variant: set[int] = set()
        self.recommended: list[int] = []
        self.plan: Any = None

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="newrun-form"):
            yield Label("Framework", classes="field")
            yield Select(
                [(f, f) for f in FRAMEWORKS], value="demo", allow_blank=False, id="framework", compact=True
            )
            yield Label("1. What did your change touch? (space ticks; levels follow)", classes="field")
            yield SelectionList[str](id="touched", compact=True)
            yield Label(
                "2. Levels (the guide below says when each is required and what it proves)", classes="field"
            )
            yield SelectionList[int](id="levels", compact=True)
            yield Static("", markup=False, id="levels-status", classes="field-hint")
            yield Label("3. Variants (optional, per level; the guide says what each proves)", classes="field")
            yield SelectionList[str](id="variants", compact=True)
            yield Static("", markup=False, id="variants-status", classes="field-hint")
            yield Label("4. Model (HF id or local path; empty: the procedure's default)", classes="field")
            yield Input(placeholder="e.g. Qwen/Qwen3-0.6B", id="model", compact=True)
            yield Label("Megatron-Bridge checkout", classes="field")
            yield Input(
                value=os.environ.get("BRIDGE_REPO", ""),
                placeholder="$BRIDGE_REPO",
                id="bridge_repo",
                compact=True,
            )
            yield Static("", markup=False, id="bridge_repo-status", classes="field-hint")
            yield Label("NeMo-RL / verl checkout", classes="field")
            yield Input(placeholder="$NEMO_RL_REPO or $VERL_REPO", id="repo", compact=True)
            yield Static("", markup=False, id="repo-status", classes="field-hint")
            yield Label("Overrides (Hydra KEY=VALUE, one per line)", classes="field")
            yield TextArea("", id="overrides")
            yield Static("", markup=False, id="overrides-status", classes="field-hint")
            yield Label("Environment (KEY=VALUE, one per line)", classes="field")
            yield TextArea("", id="env")
            yield Static("", markup=False, id="env-status", classes="field-hint")
            yield Label("Bridge tests (extra model-specific test paths, one per line)", classes="field")
            yield TextArea("", id="bridge_tests")
            yield Label("Hang timeout (seconds without training progress; empty: 1800)", classes="field")
            yield Input(placeholder="1800", id="hang_timeout", type="number", compact=True)
            yield Label("Launcher (local: this machine; slurm: sbatch from here)", classes="field")
            yield Select(
                [(n, n) for n in LAUNCHERS], value="local", allow_blank=False, id="launcher", compact=True
            )
            with VerticalGroup(id="slurm-fields"):
                for key, label, hint, kind in SLURM_INPUTS:
                    yield Label(label, classes="field")
                    yield Input(placeholder=hint, id=key, type=kind, compact=True)  # type: ignore[arg-type]
            with Horizontal(classes="dialog-buttons"):
                yield Button("Preview F2", id="preview-button")
                yield Button("Preflight F3", id="preflight-button")
                yield Button("Launch ctrl+l", id="launch-button", variant="success")
            yield Static("", markup=False, id="preflight-out")
            yield Static("", markup=False, id="preview")
        yield Static(GUIDE_START, markup=False, id="guide")
        yield ConsoleFooter()

    def on_mount(self) -> None:
        self.sub_title = "new run"
        self.query_one("#slurm-fields").display = False
        self._load_catalog("demo")
        for name in ("bridge_repo", "repo"):
            self._validate_repo(name, self.query_one(f"#{name}", Input).value)
        self.query_one("#touched", SelectionList).focus()

    @property
    def framework(self) -> str:
        return str(self.query_one("#framework", Select).value)

    # -- catalog -----------------------------------------------------------------------------
    def _load_catalog(self, framework: str) -> None:
        levels_list = self.query_one("#levels", SelectionList)
        touched = self.query_one("#touched", SelectionList)
        kept_touched = list(touched.selected)
        levels_list.clear_options()
        touched.clear_options()
        status = self.query_one("#levels-status", Static)
        try:
            self.levels = list(backend.catalog_levels(framework))
            catalog = backend.framework_catalog(framework)
            self.variant_info = list(catalog.variants)
            self.need_variant = {lv.number for lv in catalog.levels if lv.requires_variant}
        except Exception as exc:  # noqa: BLE001 - show why, keep the form usable
            self.levels, self.variant_info, self.need_variant = [], [], set()
            status.update(Text(f"levels unavailable: {exc}", style="red"))
            return
        status.update("")
        for item in self.levels:
            levels_list.add_option((self._level_prompt(item), item.number, item.number == 0))
        try:
            questions = backend.touched_areas()
        except Exception:  # noqa: BLE001 - no questions in this catalog
            questions = []
        for key, label in questions:
            touched.add_option((str(label), str(key), key in kept_touched))
        touched.display = bool(questions)
        self._load_variants()
        if kept_touched:
            self._recommend(kept_touched)
        self._check_choice()

    def _level_prompt(self, item: LevelInfo) -> Text:
        prompt = Text(f"L{item.number} ", style="bold")
        prompt.append(item.title)
        if item.gpus:
            prompt.append(f"  {item.gpus} GPU", style="dim")
        if item.number in self.recommended:
            prompt.append("  recommended", style="bold green")
        return prompt

    def _load_variants(self) -> None:
        box = self.query_one("#variants", SelectionList)
        kept = set(box.selected)
        box.clear_options()
        for v in self.variant_info:
            prompt = Text(f"{v.name}", style="bold")
            prompt.append(f"  L{'/'.join(map(str, v.levels))}  {v.title}", style="dim")
            box.add_option((prompt, v.name, v.name in kept))
        box.display = bool(self.variant_info)
        self.query_one("#variants-status", Static).update(
            "" if self.variant_info else f"{self.framework} has no variants"
        )

    def level_guide(self, number: int) -> Text:
        item = next((lv for lv in self.levels if lv.number == number), None)
        if item is None:
            return Text("")
        text = Text()
        text.append(f"Level {number}: {item.title}", style="bold")
        text.append(f"  ({item.gpus} GPU)" if item.gpus else "  (no GPU needed)", style="dim")
        if number in self.recommended:
            text.append("  recommended for your change", style="bold green")
        text.append("\nrequired when: ", style="bold")
        text.append(item.required_when or "-")
        text.append("\nproves: ", style="bold")
        text.append(item.proves or "-")
        names = [v.name for v in self.variant_info if number in v.levels]
        if names:
            need = "runs only with one of" if number in self.need_variant else "variants"
            text.append(f"\n{need}: {', '.join(names)}", style="dim")
        return text

    def variant_guide(self, name: str) -> Text:
        v = next((x for x in self.variant_info if x.name == name), None)
        if v is None:
            return Text("")
        text = Text()
        text.append(f"Variant {v.name}: {v.title}", style="bold")
        text.append(f"  (Level {'/'.join(map(str, v.levels))})", style="dim")
        how = {
            "modify": "changes the level's run",
            "rerun": "adds a second run with changed settings",
            "add": "adds its own run",
        }.get(v.mode, v.mode)
        text.append(f"\nwhat it does: {how}")
        if v.args:
            text.append(f" ({' '.join(v.args)[:120]})", style="dim")
        text.append("\nproves: ", style="bold")
        text.append(v.proves or "-")
        if v.needs_model:
            text.append("\nneeds a model that has this feature (set Model)", style="yellow")
        return text

    def _guide(self, text: Text | str) -> None:
        self.query_one("#guide", Static).update(text)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "framework" and isinstance(event.value, str):
            self._load_catalog(event.value)
        elif event.select.id == "launcher":
            self.query_one("#slurm-fields").display = event.value == "slurm"
        self.plan = None

    def on_selection_list_selection_highlighted(
        self, event: SelectionList.SelectionHighlighted[str | int]
    ) -> None:
        listing = event.selection_list
        value = listing.get_option_at_index(event.selection_index).value
        if listing.id == "levels":
            self._guide(self.level_guide(int(value)))
        elif listing.id == "variants":
            self._guide(self.variant_guide(str(value)))
        elif listing.id == "touched":
            try:
                wanted = backend.recommend_levels(self.framework, [str(value)])
            except Exception:  # noqa: BLE001 - no recommendation for this framework
                wanted = [0]
            text = Text(f"{listing.get_option_at_index(event.selection_index).prompt}\n", style="bold")
            text.append(f"needs on {self.framework}: " + ", ".join(f"Level {n}" for n in wanted))
            text.append("\nspace ticks it; tab moves on to the levels", style="dim")
            self._guide(text)

    def on_descendant_focus(self, event: Any) -> None:
        widget = getattr(event, "widget", None)
        wid = getattr(widget, "id", None)
        if isinstance(widget, SelectionList) and widget.option_count:
            if widget.highlighted is None:
                widget.highlighted = 0  # its guide follows (SelectionHighlighted)
            else:
                self.on_selection_list_selection_highlighted(
                    SelectionList.SelectionHighlighted(widget, widget.highlighted)
                )
        elif wid == "framework":
            self._guide(
                "Framework: demo runs the embedded GRPO demo (no GPU needed); nemo-rl and verl run "
                "the procedures' commands in your checkouts."
            )
        elif wid in FIELD_GUIDES:
            self._guide(FIELD_GUIDES[wid] + "\nF2 preview the exact commands  F3 preflight  ctrl+l launch")

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged[str | int]) -> None:
        self.plan = None
        if event.selection_list.id == "touched":
            self._recommend([str(v) for v in event.selection_list.selected])
        self._check_choice()

    def choice_summary(self) -> str:
        levels = sorted(self.query_one("#levels", SelectionList).selected) or [0]
        variants = list(self.query_one("#variants", SelectionList).selected)
        return (
            f"Your run: {self.framework}, "
            + ", ".join(f"Level {n}" for n in levels)
            + (f", variants: {', '.join(variants)}" if variants else ", no variant")
            + "  (ctrl+l launches after the preflight)"
        )

    def _recommend(self, touched: list[str]) -> None:
        try:
            wanted = sorted(set(backend.recommend_levels(self.framework, touched)))
        except Exception as exc:  # noqa: BLE001
            self.notify(f"no recommendation: {exc}", severity="warning")
            return
        self.recommended = [int(n) for n in wanted]
        levels = self.query_one("#levels", SelectionList)
        for i, item in enumerate(self.levels):
            with contextlib.suppress(Exception):
                levels.replace_option_prompt_at_index(i, self._level_prompt(item))
            if item.number in wanted:
                levels.select(item.number)
        self.query_one("#levels-status", Static).update(
            "recommended for what you ticked: "
            + ", ".join(f"Level {n}" for n in self.recommended)
            + " (ticked; the guide says why when you move over a level)"
        )

    def _check_choice(self) -> str | None:
        levels = sorted(self.query_one("#levels", SelectionList).selected)
        variants = list(self.query_one("#variants", SelectionList).selected)
        problem = check_choice(levels or [0], variants, self.need_variant, self.variant_info)
        status = self.query_one("#variants-status", Static)
        status.update(problem or self.choice_summary())
        status.set_class(bool(problem), "error")
        return problem

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
        self.post_message(task_done("overrides", lambda: backend.validate_overrides(overrides, repo=repo)))

    # -- spec --------------------------------------------------------------------------------
    def _overrides(self) -> list[str]:
        return [ln.strip() for ln in self.query_one("#overrides", TextArea).text.splitlines() if ln.strip()]

    def build_spec(self) -> RunSpec:
        env, err = parse_env(self.query_one("#env", TextArea).text)
        if err:
            raise SpecError(f"Environment, {err}")
        problem = self._check_choice()
        if problem:
            raise SpecError(problem)
        launcher = str(self.query_one("#launcher", Select).value)
        tests = self.query_one("#bridge_tests", TextArea).text.splitlines()
        value = self._value
        return make_spec(
            {key: value(key) for key in ("model", "repo", "hang_timeout")}
            | {key: value(key) for key, *_ in SLURM_INPUTS if launcher == "slurm"}
            | {
                "framework": self.framework,
                "levels": self.query_one("#levels", SelectionList).selected,
                "variants": self.query_one("#variants", SelectionList).selected,
                "bridge_repo": value("bridge_repo") if self.framework != "demo" else None,
                "overrides": self._overrides(),
                "env": env,
                "runs_dir": str(self.runs_dir),
                "launcher": launcher,
                "bridge_tests": [t.strip() for t in tests if t.strip()],
            }
        )

    def _value(self, input_id: str) -> str | None:
        return self.query_one(f"#{input_id}", Input).value.strip() or None

    # -- actions -----------------------------------------------------------------------------
    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_task(str(event.button.id).removesuffix("-button"))

    def _error(self, message: str) -> None:
        message = in_console_words(message)
        self.notify(message, severity="error", timeout=8)
        self._guide(Text(message, style="bold red"))

    def action_task(self, kind: str) -> None:
        """F2 preview, F3 preflight or ctrl+l launch the run the form describes."""
        try:
            spec = self.build_spec()
        except Exception as exc:  # noqa: BLE001
            self._error(str(exc))
            return
        if kind == "preflight":
            self.query_one("#preflight-out", Static).update("running preflight checks...")
            self._show("#preflight-out")
        elif kind == "launch":
            self.notify("preflight, then launch...")
        self.run_task(kind, spec)

    def _show(self, selector: str) -> None:
        """Bring a result into view (top of the form's visible part)."""
        widget = self.query_one(selector, Static)
        self.call_after_refresh(
            self.query_one("#newrun-form", VerticalScroll).scroll_to_widget, widget, animate=False, top=True
        )

    @work(thread=True, exclusive=True, group="newrun-task")
    def run_task(self, kind: str, spec: RunSpec) -> None:
        try:
            plan = backend.build_plan(spec)
            if kind == "preview":
                result: Any = plan
            elif kind == "preflight":
                result = (plan, backend.run_doctor(spec, plan))
            else:
                doctor, blocked = backend.preflight_blocks(spec, plan)
                if blocked and kind == "launch":
                    self.post_message(TaskDone("blocked", (plan, doctor, spec)))
                    return
                if blocked:  # "start anyway": the run's spec says so, and so does its report
                    spec.extra["preflight_override"] = {
                        "verdict": doctor.get("verdict"),
                        "checks": [
                            c.get("id") for c in doctor.get("checks") or [] if c.get("status") == "block"
                        ],
                        "started": time.time(),
                    }
                result = backend.start_run(spec, plan)
                with contextlib.suppress(OSError):
                    backend.write_doctor_json(result, doctor)
        except Exception as exc:  # noqa: BLE001 - SpecError and back-end errors: one line
            self.post_message(TaskDone(kind, error=str(exc)))
            return
        self.post_message(TaskDone(kind, result))

    def on_task_done(self, message: TaskDone) -> None:
        if message.kind == "overrides":
            status = self.query_one("#overrides-status", Static)
            status.update(
                in_console_words(message.error) if message.error else ("ok" if self._overrides() else "")
            )
            status.set_class(bool(message.error), "error")
            return
        if message.error:
            self._error(f"{message.kind}: {message.error}")
            if message.kind == "preflight":
                self.query_one("#preflight-out", Static).update(
                    Text(in_console_words(message.error), style="red")
                )
            return
        if message.kind == "preview":
            self.plan = message.result
            self.query_one("#preview", Static).update(render_preview(message.result))
            self._show("#preview")
            self._guide(
                "Preview: the exact commands, below. F3 runs the preflight checks; ctrl+l launches "
                "(after the same checks)."
            )
        elif message.kind == "preflight":
            self.plan, doctor = message.result
            self._show_doctor(doctor)
        elif message.kind == "blocked":
            self.plan, doctor, spec = message.result
            self._show_doctor(doctor)
            self._ask_start_anyway(spec, doctor)
        elif message.kind in ("launch", "launch-anyway"):
            from console.tui.screens.monitor import MonitorScreen

            run_dir = Path(message.result)
            self.notify(f"started {run_dir.name} (it keeps running if you quit)")
            self.app.switch_screen(MonitorScreen(run_dir))

    def _show_doctor(self, doctor: dict[str, Any]) -> None:
        self.query_one("#preflight-out", Static).update(render_doctor(doctor))
        self._show("#preflight-out")
        verdict = str(doctor.get("verdict"))
        bad = [c for c in doctor.get("checks") or [] if c.get("status") in ("block", "warn")]
        text = Text(f"Preflight: {verdict}", style="bold red" if verdict == "block" else "bold")
        text.append(f"  ({len(bad)} check(s) need a look, shown above)" if bad else "  every check ok")
        text.append(
            "\nctrl+l launches" + (" (you will be asked: start anyway?)" if verdict == "block" else ""),
            style="dim",
        )
        self._guide(text)

    def _ask_start_anyway(self, spec: RunSpec, doctor: dict[str, Any]) -> None:
        blocks = [
            f"{c.get('id')}: {str(c.get('evidence') or '').splitlines()[0][:80] if c.get('evidence') else ''}"
            for c in doctor.get("checks") or []
            if c.get("status") == "block"
        ]

        def answer(yes: bool | None) -> None:
            if yes:
                self.notify("starting anyway: the run and its report record it")
                self.run_task("launch-anyway", spec)

        self.app.push_screen(
            ConfirmDialog(
                "Preflight blocks this run. Start anyway?",
                "\n".join(blocks[:5])
                + "\nThe run's spec.json and its report will say it was started anyway.",
            ),
            answer,
        )


def render_preview(plan: Plan) -> Text:
    data: dict[str, Any] = dict(plan.to_dict())
    text = Text()
    text.append("Commands that will run\n", style="bold")
    for w in data.get("warnings") or []:
        text.append(f"! {w}\n", style="yellow")
    for d in data.get("drift") or []:  # the checkout lacks what a step names: launch blocks (F3 shows it)
        text.append(f"catalog drift: {redact_text(str(d.get('message')))}\n", style="bold red")
    if "{run_dir}" in str(data.get("steps")):
        text.append("{run_dir} is the run's own folder, created at launch\n", style="dim")
    for i, step in enumerate(data.get("steps") or [], 1):
        text.append(f"{i}. {step.get('title') or step.get('name')}", style="bold")
        if step.get("gpus"):
            text.append(f"  ({step['gpus']} GPU)")
        text.append(f"\n   cd {shlex.quote(str(step.get('cwd') or '.'))}\n")
        env = command_line({"env": step.get("env"), "unset": step.get("unset")})
        text.append(f"   {env}\n" if env else "", style="dim")
        text.append(f"   {command_line(list(step.get('argv') or []))}\n", style="cyan")
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
