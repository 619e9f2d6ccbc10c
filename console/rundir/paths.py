"""The run folder inside a plan: steps name it ``{run_dir}`` (argv, env, cwd, paths) until a run exists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

RUN_DIR = "{run_dir}"  # the run's own folder in a step's argv/env/cwd/paths, known only at launch


def fill_run_dir(value: Any, run_dir: str | Path) -> Any:
    """``value`` (a string, or lists/dicts of them, e.g. a whole plan dict) with every ``{run_dir}``
    replaced by ``run_dir``; other values as they are."""
    if isinstance(value, str):
        return value.replace(RUN_DIR, str(run_dir))
    if isinstance(value, list):
        return [fill_run_dir(v, run_dir) for v in value]
    if isinstance(value, dict):
        return {k: fill_run_dir(v, run_dir) for k, v in value.items()}
    return value


def step_path(value: str | None, step: dict[str, Any], run_dir: Path) -> Path | None:
    """A step's file or folder (``metrics_json``, ``tb_dir``): ``{run_dir}`` filled, a relative one
    taken from the step's cwd; None when unset, or relative with no cwd."""
    if not value:
        return None
    path = Path(fill_run_dir(str(value), run_dir))
    if path.is_absolute():
        return path
    cwd = fill_run_dir(str(step.get("cwd") or ""), run_dir)
    return Path(cwd) / path if cwd else None
