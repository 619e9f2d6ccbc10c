"""`run_interpreter`: the interpreter the run uses, its package versions, and whether its uv environment
is ready offline; plus where `megatron.core` comes from. The probe itself is console/doctor/interpreter.py."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from console.commandtext import command_line
from console.doctor.context import DoctorContext
from console.doctor.interpreter import RunInterpreter, run_interpreter, sync_flags, versions_text
from console.doctor.model import Check
from console.doctor.result import Item, combine, make_remedy

CHECK_ID = "run_interpreter"


def check_run_interpreter(ctx: DoctorContext) -> Check:
    it = run_interpreter(ctx)
    where = f"`{it.command}` in {it.cwd or 'the current directory'} ({it.source})"
    items = [_probe_item(ctx, it, where)]
    if it.uses_uv and it.offline:
        items.append(_offline_item(it.offline, "the run's `uv run`"))
        items += [
            _offline_item(o, f"`uv run` of {', '.join(o.get('steps') or [])}") for o in it.offline_steps
        ]
    core = _core_item(ctx, it)
    if core is not None:
        items.append(core)
    return combine(CHECK_ID, items)


def _probe_item(ctx: DoctorContext, it: RunInterpreter, where: str) -> Item:
    if it.case == "no_uv" and ctx.framework == "verl":
        return Item("no_uv_verl", f"{where}: uv is not on PATH", make_remedy(env={"VERL_USE_UV": "0"}))
    if it.case == "no_uv":
        return Item("no_uv", f"{where}: uv is not on PATH")
    if it.case == "no_python":
        return Item("no_python", f"{where}: {it.problem}")
    if it.case == "no_env":
        sync = ["uv", "sync", *sync_flags(it.argv)]
        return Item(
            "no_env",
            f"{where}: {it.problem}; versions not read",
            make_remedy(commands=[sync]),
            facts={"sync": command_line(sync)},
        )
    if not it.usable:
        return Item("failed", f"{where}: {it.problem}", facts={"command": it.command})
    a = it.answer
    timed = f" ({it.problem})" if it.problem else ""
    return Item(
        "ok",
        f"{where} -> {a.get('executable')} (Python {a.get('python')}, EXT_SUFFIX "
        f"{a.get('ext_suffix')}): {versions_text(it)}{timed}",
    )


def _offline_item(off: dict[str, Any], who: str) -> Item:
    cmd = command_line([str(a) for a in off.get("command") or []])
    if off.get("error"):
        return Item("offline_unresolvable", f"`{cmd}`: {off['error']}", facts={"command": cmd})
    if off.get("download"):
        create = f"creates {off['create']}, " if off.get("create") else ""
        return Item(
            "would_download",
            f"`{cmd}`: {who} {create}would download {off['download']} "
            f"and install {off.get('install', 0)} package(s)",
            facts={"n": off["download"]},
        )
    if off.get("install") or off.get("uninstall") or off.get("create"):
        return Item(
            "ok",
            f"`{cmd}`: {who} would install {off.get('install', 0)} and remove "
            f"{off.get('uninstall', 0)} package(s) from the uv cache (no download)",
        )
    return Item("ok", f"`{cmd}`: {who} finds its environment in sync with uv.lock and runs offline")


def _core_item(ctx: DoctorContext, it: RunInterpreter) -> Item | None:
    """megatron.core from somewhere other than the Bridge's Megatron-LM submodule (e.g. /workspace/Megatron-LM)."""
    core = it.answer.get("megatron_core") if it.usable else None
    if not core or not isinstance(core, str) or core.startswith("error:") or ctx.bridge is None:
        return None
    sub = ctx.bridge / ctx.catalog["paths"]["mcore_in_bridge"]
    if Path(os.path.realpath(core)).is_relative_to(os.path.realpath(sub)):
        return Item("ok", f"megatron.core from {core}")
    return Item(
        "mcore_elsewhere",
        f"megatron.core from {core}, not from {sub}",
        facts={"path": core, "expected": str(sub)},
    )
