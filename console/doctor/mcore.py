"""`mcore_helpers`: Megatron-Core's `helpers_cpp` built with the interpreter's EXT_SUFFIX; python3-config."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

from console.doctor.context import DoctorContext
from console.doctor.interpreter import run_interpreter
from console.doctor.model import Check
from console.doctor.probe import MARKER, run_probe
from console.doctor.result import NOT_APPLICABLE_DEMO, finding, make_remedy

CHECK_ID = "mcore_helpers"
_SUFFIX_PROBE = (
    f"import json, sysconfig; print({MARKER!r} + json.dumps(sysconfig.get_config_var('EXT_SUFFIX') or '.so'))"
)


def ext_suffix(ctx: DoctorContext) -> tuple[str, str]:
    """(EXT_SUFFIX, whose): from the interpreter the run uses, probed in its own environment; the
    console's interpreter only when the run's could not be probed (and the evidence says so)."""
    it = run_interpreter(ctx)
    if it.usable and it.answer.get("ext_suffix"):
        whose = f"EXT_SUFFIX of the run's interpreter {it.answer.get('executable')}"
        return str(it.answer["ext_suffix"]), whose
    whose = f"EXT_SUFFIX of the console's {ctx.python} (the run's `{it.command}` could not be probed: {it.problem})"
    if ctx.python == sys.executable:
        return sysconfig.get_config_var("EXT_SUFFIX") or ".so", whose
    probe = run_probe([ctx.python, "-c", _SUFFIX_PROBE], ctx.env, None, 30)
    return (str(probe.payload) if isinstance(probe.payload, str) else ".so"), whose


def mcore_root(ctx: DoctorContext) -> Path | None:
    """The first PYTHONPATH entry holding megatron/core, else the Bridge's Megatron-LM submodule."""
    for entry in (ctx.env.get("PYTHONPATH") or "").split(":"):
        if entry and (Path(entry) / "megatron" / "core").is_dir():
            return Path(entry)
    if ctx.bridge is not None:
        sub = ctx.bridge / ctx.catalog["paths"]["mcore_in_bridge"]
        if (sub / "megatron" / "core").is_dir():
            return sub
    return None


def check_mcore_helpers(ctx: DoctorContext) -> Check:
    if ctx.is_demo:
        return finding(CHECK_ID, "not_applicable", NOT_APPLICABLE_DEMO)
    root = mcore_root(ctx)
    if root is None:
        where = str(ctx.bridge / ctx.catalog["paths"]["mcore_in_bridge"]) if ctx.bridge else "PYTHONPATH"
        return finding(CHECK_ID, "no_mcore", f"no megatron/core on PYTHONPATH or under {where}", mcore=where)
    ext, whose = ext_suffix(ctx)
    datasets = root / ctx.catalog["paths"]["mcore_helpers_dir"]
    config = ctx.probes.which("python3-config")
    config_note = f"python3-config: {config or 'not on PATH'}; {whose}"
    expected = datasets / f"helpers_cpp{ext}"
    build = make_remedy(commands=[["make", "-C", str(datasets), f"LIBEXT={ext}"]])
    if expected.is_file():
        return finding(CHECK_ID, "ok", f"{expected} present; {config_note}")
    others = sorted(p.name for p in datasets.glob("helpers_cpp*") if p.is_file()) if datasets.is_dir() else []
    if others:
        case, what = "suffixless", f"{', '.join(others)} but no helpers_cpp{ext}"
    else:
        writable = os.access(datasets, os.W_OK)
        case = "not_built_no_config" if not config else "not_built_writable" if writable else "not_built"
        what = f"no helpers_cpp{ext}"
    evidence = f"{datasets}: {what}; {config_note}"
    return finding(CHECK_ID, case, evidence, build, ext=ext, datasets=str(datasets))
