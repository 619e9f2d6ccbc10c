"""The headless core as the console uses it: one place for every call into it. Each function imports
its core module when first called (plain imports, so the import checker sees every edge): the console
starts without paying for Hydra, the triage catalog or NVML."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from console.errors import ConsoleError

if TYPE_CHECKING:
    from console.catalog import FrameworkCatalog
    from console.doctor.model import DoctorResult
    from console.monitor.gpu import GpuSampler
    from console.monitor.host import HostSampler
    from console.plan import LevelInfo, Plan
    from console.spec import RunSpec


def build_plan(spec: RunSpec) -> Plan:
    from console.plan import build_plan

    return build_plan(spec)


def catalog_levels(framework: str) -> list[LevelInfo]:
    from console.plan import catalog_levels

    return catalog_levels(framework)


def recommend_levels(framework: str, touched: list[str]) -> list[int]:
    from console.plan import recommend_levels

    return recommend_levels(framework, touched)


def validate_overrides(overrides: list[str], repo: str | None = None) -> list[str]:
    from console.plan import validate_overrides

    return validate_overrides(overrides, repo=repo)


def framework_catalog(framework: str) -> FrameworkCatalog:
    from console.catalog import load_framework

    return load_framework(framework)


def touched_areas() -> list[tuple[str, str]]:
    """(id, label) answers of "what did your change touch?"."""
    from console.plan import touched_areas

    return list(touched_areas())


def run_doctor(spec: Any, plan: Any) -> DoctorResult:
    from console.doctor import run_doctor

    return run_doctor(spec, plan)


def preflight_blocks(spec: Any, plan: Any) -> tuple[DoctorResult, bool]:
    """The launch-time preflight (as ``rl-console run`` does it): result and whether it blocks."""
    from console.doctor.preflight import blocks, preflight

    result = preflight(spec, plan, None)
    return result, bool(blocks(result))


def write_doctor_json(run_dir: Path, result: DoctorResult) -> None:
    from console.doctor.preflight import write_doctor_json

    write_doctor_json(run_dir, result)


def start_run(spec: RunSpec, plan: Plan | None = None) -> Path:
    from console.runs.launch import start_run

    return Path(start_run(spec, plan=plan))


def start_cancel(run_dir: Path, grace: float, output: IO[bytes]) -> subprocess.Popen[bytes]:
    """``rl-console cancel`` in a child of its own session writing to ``output``: the cancel goes on to
    its end (SIGINT -> SIGTERM -> SIGKILL takes a while) even when the console quits first."""
    argv = [sys.executable, "-m", "console", "cancel", str(run_dir), "--grace", str(grace)]
    return subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
    )


def rerun_with_remedy(run_dir: Path, remedy: dict[str, Any]) -> Path:
    from console.runs.rerun import rerun_with_remedy

    return Path(rerun_with_remedy(run_dir, remedy))


def triage_in_subprocess(paths: list[Path], stop: Callable[[], bool]) -> dict[str, Any] | None:
    """``rl-console triage --json`` in a child process: a multi-GB log's scan never holds the
    console's GIL (the view stays responsive). The child is killed, and None returned, once ``stop()``."""
    import json

    argv = [sys.executable, "-m", "console", "triage", "--json", *(str(p) for p in paths)]
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    while True:
        try:
            out, err = proc.communicate(timeout=0.2)  # retried after a timeout: no output is lost
            break
        except subprocess.TimeoutExpired:
            if stop():
                proc.kill()
                proc.communicate()
                return None
    try:
        return dict(json.loads(out))
    except ValueError:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        raise ConsoleError(lines[-1] if lines else f"triage exited {proc.returncode}") from None


def failure_class(cls: str, framework: str) -> dict[str, Any]:
    """A triage class's title, advice and remedy (for the framework) from the triage catalog."""
    from console.triage.rules import default_catalog

    info = default_catalog().classes.get(cls)
    if info is None:
        return {}
    return {"title": info.title, "advice": info.advice_for(framework), "remedy": info.remedy_for(framework)}


def run_verdict(run_dir: Path) -> dict[str, Any]:
    """The verdict recorded at the run's end (the one ls/show/report give); computed while it runs."""
    from console.report import recorded_verdict
    from console.triage import verdict

    recorded = recorded_verdict(run_dir)
    return recorded if recorded is not None else dict(verdict.run_verdict(run_dir))


def render_report(run_dir: Path) -> str:
    from console.report import render_markdown
    from console.runs.recover import current_state

    current_state(run_dir)  # a run whose supervisor is lost is settled before it is reported
    return render_markdown(run_dir)


def host_sampler(run_dir: Path) -> HostSampler:
    from console.monitor.host import HostSampler, default_disk_paths

    return HostSampler(default_disk_paths(run_dir))


def gpu_sampler() -> GpuSampler:
    from console.monitor.gpu import GpuSampler

    return GpuSampler()
