"""`disk_space`: free space where the run writes (HF caches, model, checkpoints, Ray's /tmp, run folder)
against a need estimated from the model size when known."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from console.doctor.context import DoctorContext, existing_ancestor
from console.doctor.hf import hf_home, hub_cache, local_model_path, snapshot_dir, verl_model_path
from console.doctor.model import Check
from console.doctor.result import Item, combine
from console.fileio import runs_folder_problem

CHECK_ID = "disk_space"
GIB = 1024**3
_SIZE_RE = re.compile(r"(?:^|[-_/])(\d+(?:\.\d+)?)([BbMm])(?=$|[-_.])")


def model_params(model: str | None) -> float | None:
    """Parameter count from a model name such as `Qwen/Qwen2.5-0.5B` or `org/foo-600M`; None if unknown."""
    found = _SIZE_RE.findall(Path(model).name) if model else []
    if not found:
        return None
    number, unit = found[-1]
    return float(number) * (1e9 if unit in "Bb" else 1e6)


@dataclass
class Place:
    role: str
    label: str
    path: Path
    estimate: float  # bytes this role will write, 0 when unknown/nothing


def places(ctx: DoctorContext) -> list[Place]:
    disk = ctx.catalog["disk"]
    params = model_params(ctx.model())
    weights = params * disk["weights_bytes_per_param"] * disk["estimate_margin"] if params else 0.0
    out: list[Place] = []
    if not ctx.is_demo:
        model = ctx.model() or ""
        have_local = bool(model) and (
            local_model_path(ctx, model) is not None or snapshot_dir(hub_cache(ctx.env), model) is not None
        )
        out.append(Place("hf_home", "HF_HOME", hf_home(ctx.env), 0.0))
        out.append(Place("hf_cache", "HF_HUB_CACHE", hub_cache(ctx.env), 0.0 if have_local else weights))
        mp = verl_model_path(ctx) if ctx.framework == "verl" else ctx.path_setting("MODEL_PATH")
        if mp is not None:
            out.append(Place("model_path", "MODEL_PATH", mp, 0.0 if mp.is_dir() else weights))
        ckpt = _checkpoint_dir(ctx)
        if ckpt is not None:
            est = params * disk["checkpoint_bytes_per_param"] * disk["estimate_margin"] if params else 0.0
            out.append(Place("checkpoints", "checkpoints", ckpt, est))
    out.append(Place("ray_tmp", "Ray session dir", Path(ctx.env.get("RAY_TMPDIR") or "/tmp"), 0.0))
    out.append(Place("run_dir", "run folder", ctx.run_dir or Path(ctx.spec.runs_dir), 0.0))
    return out


def _checkpoint_dir(ctx: DoctorContext) -> Path | None:
    disk = ctx.catalog["disk"]
    for key in disk["checkpoint_dir_overrides"]:
        value = ctx.override_value(key)
        if value:
            path = Path(value).expanduser()
            return path if path.is_absolute() else Path(ctx.cwd or ".") / path
    if any(level in disk["checkpoint_levels"].get(ctx.framework, []) for level in ctx.spec.levels):
        return Path(ctx.cwd or ".") / disk["checkpoint_default_dir"][ctx.framework]
    return None


def _fs_key(path: Path) -> object:
    try:
        return os.stat(existing_ancestor(str(path))).st_dev
    except OSError:
        return str(path)


def _fmt(n: float) -> str:
    return f"{n / GIB:.1f} GiB" if n >= GIB / 10 else f"{n / 1024**2:.1f} MiB"


def check_disk_space(ctx: DoctorContext) -> Check:
    disk = ctx.catalog["disk"]
    floors = disk["min_free_gib"]
    groups: dict[object, list[Place]] = {}
    for place in places(ctx):
        groups.setdefault(_fs_key(place.path), []).append(place)
    items: list[Item] = []
    for members in groups.values():
        path = str(members[0].path)
        labels = ", ".join(f"{m.label} {m.path}" for m in members)
        try:
            free = float(ctx.probes.free_bytes(path))
        except OSError as exc:
            items.append(Item("low", f"{labels}: cannot read free space ({exc})", facts={"paths": labels}))
            continue
        need = max(max(floors[m.role] * GIB for m in members), sum(m.estimate for m in members))
        case = "full" if free < need else "low" if free < need * disk["warn_factor"] else "ok"
        items.append(Item(case, f"{labels}: {_fmt(free)} free, need {_fmt(need)}", facts={"paths": labels}))
    # One advice sentence naming every place that is short.
    short = {case: [i.facts["paths"] for i in items if i.case == case] for case in ("full", "low")}
    for item in items:
        if item.case in short:
            item.facts = {"paths": "; ".join(short[item.case])}
    runs_dir = ctx.run_dir or Path(ctx.spec.runs_dir)
    why = runs_folder_problem(runs_dir)
    if why is not None:
        items.append(
            Item(
                "runs_unwritable", f"runs folder {runs_dir}: {why}", facts={"path": str(runs_dir), "why": why}
            )
        )
    return combine(CHECK_ID, items)
