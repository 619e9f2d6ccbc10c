"""Run ids: sortable and readable, ``YYYYMMDD-HHMMSS-<framework>-l<levels>[-<variant>...]``."""

from __future__ import annotations

import re
import time
from pathlib import Path

from console.spec import RunSpec

_UNSAFE = re.compile(r"[^a-z0-9]+")


def _slug(text: str) -> str:
    return _UNSAFE.sub("-", text.lower()).strip("-") or "x"


def base_run_id(spec: RunSpec, now: float | None = None) -> str:
    """The id without collision suffix, e.g. ``20261121-223600-demo-l0`` or ``...-nemo-rl-l01-lora``."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if now is None else now))
    levels = "".join(str(int(level)) for level in (spec.levels or [0]))
    parts = [stamp, _slug(spec.framework), f"l{levels}"]
    parts += [_slug(v) for v in spec.variants]
    return "-".join(parts)


def create_run_dir(runs_dir: Path, spec: RunSpec, now: float | None = None) -> Path:
    """Create and return a fresh run folder; ``-2``, ``-3``... on collision (atomic ``mkdir``)."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    base = base_run_id(spec, now)
    for n in range(1, 10_000):
        path = runs_dir / (base if n == 1 else f"{base}-{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError(f"cannot create a run folder under {runs_dir}")


def looks_like_run_dir(path: Path) -> bool:
    return path.is_dir() and (path / "state.json").exists()
