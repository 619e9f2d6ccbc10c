"""Rerun with a remedy: a new run linked to an earlier one, its spec changed by the remedy."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from console.errors import SpecError
from console.redact import MASK
from console.runs.launch import start_run
from console.spec import RunSpec


def apply_remedy(spec: RunSpec, remedy: dict[str, Any], linked_from: str) -> RunSpec:
    """Env set and unset, overrides appended; ``extra["linked_from"]`` and ``extra["remedy"]`` recorded."""
    unset = [str(u) for u in remedy.get("unset") or []]
    env = {**spec.env, **{str(k): str(v) for k, v in (remedy.get("env") or {}).items()}}
    # spec.json holds secrets masked: take the real value from this environment, or drop it
    env = {
        k: os.environ[k] if v == MASK else v
        for k, v in env.items()
        if k not in unset and (v != MASK or k in os.environ)
    }
    wanted = [str(o) for o in remedy.get("overrides") or []]
    overrides = list(spec.overrides) + [o for o in wanted if o not in spec.overrides]
    recorded = {
        "class": remedy.get("class"),
        "env": dict(remedy.get("env") or {}),
        "unset": unset,
        "overrides": wanted,
    }
    extra = {**spec.extra, "linked_from": linked_from, "remedy": recorded}
    return replace(
        spec,
        levels=list(spec.levels),
        variants=list(spec.variants),
        overrides=overrides,
        env=env,
        extra=extra,
    )


def rerun_with_remedy(run_dir: Path, remedy: dict[str, Any]) -> Path:
    """Start the linked rerun of ``run_dir`` (same runs folder) and return its folder."""
    run_dir = Path(run_dir)
    try:
        spec = RunSpec.from_dict(json.loads((run_dir / "spec.json").read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise SpecError(f"rerun: cannot read {run_dir / 'spec.json'}: {exc}") from None
    if not isinstance(remedy, dict):
        raise SpecError("rerun: the remedy must be a mapping with env/unset/overrides")
    spec.runs_dir = str(run_dir.parent)
    new_spec = apply_remedy(spec, remedy, run_dir.name)
    return start_run(new_spec)
