"""`tools`: uv; for verl nvtx/nsys, GSM8K parquet, reward model, VERL_USE_UV; for NeMo-RL the container
fingerprint and TORCH_CUDA_ARCH_LIST."""

from __future__ import annotations

from pathlib import Path

from console.doctor.context import DoctorContext
from console.doctor.devices import cuda_arch_list
from console.doctor.interpreter import python_argv
from console.doctor.model import Check
from console.doctor.probe import MARKER, run_probe
from console.doctor.result import NOT_APPLICABLE_DEMO, Item, combine, finding, make_remedy

CHECK_ID = "tools"
_FALSE = ("false", "False", "0", "null", "None", "none")
_NVTX_PROBE = (
    f"import importlib.util, json; "
    f"print({MARKER!r} + json.dumps({{'nvtx': importlib.util.find_spec('nvtx') is not None}}))"
)


def check_tools(ctx: DoctorContext) -> Check:
    if ctx.is_demo:
        return finding(CHECK_ID, "not_applicable", NOT_APPLICABLE_DEMO)
    items = [uv_item(ctx)]
    if ctx.framework == "verl":
        items += [verl_uv_item(ctx), profiler_item(ctx), gsm8k_item(ctx), reward_model_item(ctx)]
    elif ctx.framework == "nemo-rl":
        items += [fingerprint_item(ctx), cuda_arch_item(ctx)]
    return combine(CHECK_ID, items)


def uv_item(ctx: DoctorContext) -> Item:
    uv = ctx.probes.which("uv")
    if uv:
        return Item("ok", f"uv: {uv}")
    return Item("no_uv" if ctx.framework == "nemo-rl" else "no_uv_verl", "uv: not on PATH")


def _wrapper_text(ctx: DoctorContext) -> str:
    if ctx.repo is None:
        return ""
    try:
        return (ctx.repo / ctx.catalog["paths"]["verl_wrapper"]).read_text(errors="replace")
    except OSError:
        return ""


def verl_uv_item(ctx: DoctorContext) -> Item:
    if "VERL_USE_UV" not in _wrapper_text(ctx):
        return Item("ok", "verl wrapper: no uv launcher (runs python3 directly)")
    value = ctx.setting("VERL_USE_UV")
    if value == "0":
        return Item("ok", "VERL_USE_UV=0: the wrapper runs the image's python3")
    return Item(
        "verl_uses_uv",
        f"verl wrapper has a uv launcher and VERL_USE_UV={value or '<unset, 1>'}",
        make_remedy(env={"VERL_USE_UV": "0"}),
    )


def profiler_item(ctx: DoctorContext) -> Item:
    tool = ctx.override_value("global_profiler.tool")
    steps = ctx.override_value("global_profiler.steps")
    if tool in _FALSE or steps in _FALSE:
        return Item("ok", "profiler: disabled by override")
    argv, label = python_argv(ctx)
    probe = run_probe([*argv, "-c", _NVTX_PROBE], ctx.env, ctx.cwd, 60)
    has_nvtx = bool((probe.payload or {}).get("nvtx"))
    nsys = ctx.probes.which("nsys")
    evidence = (
        f"nvtx: {'importable' if has_nvtx else 'not importable'} by {label}; nsys: {nsys or 'not on PATH'}"
    )
    if has_nvtx and nsys:
        return Item("ok", evidence)
    return Item("no_nvtx", evidence, make_remedy(overrides=["global_profiler.tool=null"]))


def gsm8k_item(ctx: DoctorContext) -> Item:
    paths = ctx.catalog["paths"]
    train = ctx.path_setting("TRAIN_FILES", paths["verl_train_files"])
    val = ctx.path_setting("VAL_FILES", paths["verl_val_files"])
    missing = [str(p) for p in (train, val) if p is not None and not p.is_file()]
    if not missing:
        return Item("ok", f"GSM8K: {train}, {val}")
    out_dir = str(train.parent) if train is not None else str(Path("~/data/gsm8k").expanduser())
    prep = paths["verl_gsm8k_prep"]
    preparer = ctx.step_running(prep)
    if preparer:
        return Item(
            "ok", f"GSM8K parquet missing now ({', '.join(missing)}); the plan's step {preparer} prepares it"
        )
    return Item(
        "no_gsm8k",
        f"GSM8K parquet missing: {', '.join(missing)}",
        make_remedy(commands=[["python3", prep, "--local_save_dir", out_dir]]),
        facts={"prep": prep},
    )


def reward_model_item(ctx: DoctorContext) -> Item:
    enabled = ctx.override_value("reward.reward_model.enable")
    if enabled in _FALSE:
        return Item("ok", "reward model: disabled by override (a limitation to report)")
    path = ctx.path_setting("RM_MODEL_PATH", ctx.catalog["paths"]["verl_rm_model_path"])
    if path is not None and path.is_dir():
        return Item("ok", f"reward model: {path}")
    return Item(
        "no_reward_model",
        f"reward model path missing: {path}",
        make_remedy(overrides=["reward.reward_model.enable=False"]),
    )


def fingerprint_item(ctx: DoctorContext) -> Item:
    if (ctx.setting("NRL_FORCE_REBUILD_VENVS") or "").lower() == "true":
        return Item("ok", "NRL_FORCE_REBUILD_VENVS=true (worker venvs rebuilt)")
    stored = Path(ctx.catalog["paths"]["nemo_rl_fingerprint_file"])
    script = (ctx.repo / ctx.catalog["paths"]["nemo_rl_fingerprint_script"]) if ctx.repo else None
    if not stored.is_file():
        return Item("ok", f"container fingerprint: no {stored} (not the NeMo-RL container)")
    if script is None or not script.is_file():
        return Item("ok", f"container fingerprint: no {script} in the checkout; not compared")
    limit = float(ctx.catalog["defaults"]["fingerprint_timeout_s"])
    argv, _label = python_argv(ctx)
    probe = run_probe([*argv, "-c", _RUN_SCRIPT, str(script)], ctx.env, str(ctx.repo), limit)
    if not isinstance(probe.payload, str):
        return Item("ok", f"container fingerprint: {script} gave no answer ({probe.problem()}); not compared")
    try:
        expected = stored.read_text().strip()
    except OSError as exc:
        return Item("ok", f"container fingerprint: cannot read {stored} ({exc})")
    if probe.payload.strip() == expected:
        return Item("ok", f"container fingerprint matches {stored}")
    return Item(
        "fingerprint_mismatch",
        f"container fingerprint {stored} differs from {script}'s output",
        make_remedy(env={"NRL_FORCE_REBUILD_VENVS": "true"}),
    )


# Runs a script and reports its stdout as one JSON string.
_RUN_SCRIPT = f"""
import json, subprocess, sys
out = subprocess.run([sys.executable, sys.argv[1]], capture_output=True, text=True)
if out.returncode == 0:
    print({MARKER!r} + json.dumps(out.stdout))
else:
    sys.stderr.write(out.stderr[-2000:])
"""


def cuda_arch_item(ctx: DoctorContext) -> Item:
    value = ctx.setting("TORCH_CUDA_ARCH_LIST")
    if value:
        return Item("ok", f"TORCH_CUDA_ARCH_LIST={value!r}")
    return Item(
        "no_cuda_arch",
        "TORCH_CUDA_ARCH_LIST unset (Megatron backend)",
        make_remedy(env={"TORCH_CUDA_ARCH_LIST": cuda_arch_list(ctx)}),
    )
