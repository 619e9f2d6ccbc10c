"""The headless core as the console uses it: one place for every call into it.

Each function imports its back-end lazily, so a screen whose back-end is absent says so in one
line (``BackendMissing``) instead of crashing the app.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from console.errors import ConsoleError


class BackendMissing(ConsoleError):
    pass


def _get(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise BackendMissing(f"{module}.{name} is not available ({exc.__class__.__name__})") from None


def build_plan(spec: Any) -> Any:
    return _get("console.plan", "build_plan")(spec)


def catalog_levels(framework: str) -> Any:
    return _get("console.plan", "catalog_levels")(framework)


def recommend_levels(framework: str, touched: list[str]) -> Any:
    return _get("console.plan", "recommend_levels")(framework, touched)


def validate_overrides(overrides: list[str], repo: str | None = None) -> Any:
    return _get("console.plan", "validate_overrides")(overrides, repo=repo)


def framework_catalog(framework: str) -> Any:
    """The framework's catalog: ``.levels`` (with ``requires_variant``) and ``.variants`` (name, levels,
    title, mode, proves, args, needs_model)."""
    return _get("console.catalog", "load_framework")(framework)


def touched_areas() -> list[tuple[str, str]]:
    """(id, label) answers of "what did your change touch?"."""
    return list(_get("console.plan", "touched_areas")())


def run_doctor(spec: Any, plan: Any) -> dict[str, Any]:
    return _get("console.doctor", "run_doctor")(spec, plan)


def preflight_blocks(spec: Any, plan: Any) -> tuple[dict[str, Any], bool]:
    """The launch-time preflight (as ``rl-console run`` does it): result and whether it blocks."""
    result = _get("console.doctor.preflight", "preflight")(spec, plan, None)
    return result, bool(_get("console.doctor.preflight", "blocks")(result))


def write_doctor_json(run_dir: Path, result: dict[str, Any]) -> None:
    _get("console.doctor.preflight", "write_doctor_json")(run_dir, result)


def start_run(spec: Any, plan: Any = None) -> Path:
    return Path(_get("console.runs.launch", "start_run")(spec, plan=plan))


def cancel_run(run_dir: Path, grace: float = 10.0) -> Any:
    return _get("console.runs.cancel", "cancel_run")(run_dir, grace)


def rerun_with_remedy(run_dir: Path, remedy: dict[str, Any]) -> Path:
    return Path(_get("console.runs.rerun", "rerun_with_remedy")(run_dir, remedy))


def triage_files(paths: list[Path]) -> dict[str, Any]:
    return _get("console.triage.scan", "triage_files")(paths)


def triage_in_subprocess(paths: list[Path], started: Any = None) -> dict[str, Any]:
    """``rl-console triage --json`` in a child process: a multi-GB log's scan never holds the
    console's GIL (the view stays responsive). ``started(proc)`` gets the process (to stop it)."""
    import json
    import subprocess
    import sys

    argv = [sys.executable, "-m", "console", "triage", "--json", *(str(p) for p in paths)]
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    if started is not None:
        started(proc)
    out, err = proc.communicate()
    try:
        return dict(json.loads(out))
    except ValueError:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        raise ConsoleError(lines[-1] if lines else f"triage exited {proc.returncode}") from None


def failure_class(cls: str, framework: str) -> dict[str, Any]:
    """A triage class's title, advice and remedy (for the framework) from the triage catalog."""
    info = _get("console.triage.rules", "default_catalog")().classes.get(cls)
    if info is None:
        return {}
    return {"title": info.title, "advice": info.advice_for(framework), "remedy": info.remedy_for(framework)}


def run_verdict(run_dir: Path) -> dict[str, Any]:
    """The verdict recorded at the run's end (the one ls/show/report give); computed while it runs."""
    recorded = _get("console.report", "recorded_verdict")(run_dir)
    return recorded if recorded is not None else _get("console.triage.verdict", "run_verdict")(run_dir)


def render_report(run_dir: Path) -> str:
    return _get("console.report", "render_markdown")(run_dir)


def host_sampler(run_dir: Path) -> Any:
    paths = _get("console.monitor.host", "default_disk_paths")(run_dir)
    return _get("console.monitor.host", "HostSampler")(paths)


def gpu_sampler() -> Any:
    return _get("console.monitor.gpu", "GpuSampler")()


def as_data(sample: Any) -> dict[str, Any]:
    """A sampler's snapshot as the event payload dict (``to_event_data``), or the dict itself."""
    if hasattr(sample, "to_event_data"):
        return dict(sample.to_event_data())
    return dict(sample) if isinstance(sample, dict) else {}
