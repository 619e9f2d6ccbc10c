"""`hf_snapshot`: the model and tokenizer are in the HF hub cache and load offline."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from console.doctor.context import DoctorContext
from console.doctor.probe import MARKER, run_probe
from console.doctor.result import NOT_APPLICABLE_DEMO, finding, make_remedy

CHECK_ID = "hf_snapshot"
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

# argv: snapshot path. Loads config and tokenizer with local_files_only=True, as the procedure shows.
LOAD_PROBE = f"""
import json, sys
path = sys.argv[1]
try:
    from transformers import AutoConfig, AutoTokenizer
except ModuleNotFoundError as exc:
    print({MARKER!r} + json.dumps({{"no_transformers": str(exc)}}), flush=True)
    raise SystemExit(0)
try:
    config = AutoConfig.from_pretrained(path, trust_remote_code=True, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=True, local_files_only=True)
except BaseException as exc:
    print({MARKER!r} + json.dumps({{"error": type(exc).__name__ + ": " + str(exc)[:500]}}), flush=True)
    raise SystemExit(0)
print({MARKER!r} + json.dumps({{"config": type(config).__name__, "model_type": getattr(config, "model_type", None),
      "tokenizer": type(tokenizer).__name__, "vocab_size": tokenizer.vocab_size}}), flush=True)
"""


def hf_home(env: dict[str, str]) -> Path:
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser()
    xdg = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or str(Path.home()), ".cache")
    return Path(xdg).expanduser() / "huggingface"


def hub_cache(env: dict[str, str]) -> Path:
    explicit = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE")
    return Path(explicit).expanduser() if explicit else hf_home(env) / "hub"


def snapshot_dir(cache: Path, model: str) -> Path | None:
    """`<cache>/models--org--name/snapshots/<sha>` for `refs/main`, else the newest snapshot."""
    repo = cache / ("models--" + model.replace("/", "--"))
    snapshots = repo / "snapshots"
    ref = repo / "refs" / "main"
    try:
        if ref.is_file():
            sha = ref.read_text().strip()
            if sha and (snapshots / sha).is_dir():
                return snapshots / sha
        candidates = [p for p in snapshots.iterdir() if p.is_dir()] if snapshots.is_dir() else []
    except OSError:
        return None
    return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None


def local_model_path(ctx: DoctorContext, model: str) -> Path | None:
    """The model as a local directory: a path given as the model, or verl's MODEL_PATH."""
    if model.startswith(("/", ".", "~")) and Path(model).expanduser().is_dir():
        return Path(model).expanduser()
    if ctx.framework == "verl":
        path = verl_model_path(ctx)
        return path if path is not None and path.is_dir() else None
    return None


def verl_model_path(ctx: DoctorContext) -> Path | None:
    """verl's wrapper reads weights from MODEL_PATH (default ${HOME}/models/${MODEL_ID}); it downloads nothing."""
    return ctx.path_setting("MODEL_PATH", ctx.catalog["paths"]["verl_model_path"])


def pin_remedy(ctx: DoctorContext, path: Path) -> dict[str, Any]:
    """Switch the run to the snapshot path, offline."""
    if ctx.framework == "nemo-rl":
        return make_remedy(env=OFFLINE_ENV, overrides=[f"policy.model_name={path}", f"policy.tokenizer.name={path}"])
    return make_remedy(env={**OFFLINE_ENV, "MODEL_PATH": str(path)})


def check_hf_snapshot(ctx: DoctorContext) -> dict[str, Any]:
    model = ctx.model()
    if ctx.is_demo or not model:
        return finding(CHECK_ID, "not_applicable", NOT_APPLICABLE_DEMO if ctx.is_demo else "no model")
    cache = hub_cache(ctx.env)
    local = local_model_path(ctx, model)
    path = local or snapshot_dir(cache, model)
    offline = ctx.env.get("HF_HUB_OFFLINE", "") not in ("", "0") or ctx.env.get("TRANSFORMERS_OFFLINE", "") not in ("", "0")
    if ctx.framework == "verl" and local is None:
        wanted = verl_model_path(ctx)
        if path is None:
            return finding(CHECK_ID, "verl_missing", f"{model}: no MODEL_PATH {wanted} and no snapshot under {cache}",
                           make_remedy(commands=[["hf", "download", model, "--local-dir", str(wanted)]]),
                           model=model, path=str(wanted))
    if path is None:
        case = "missing_offline" if offline else "missing"
        return finding(CHECK_ID, case, f"{model}: no snapshot under {cache}", model=model, cache=str(cache))
    probe = run_probe([ctx.python, "-c", LOAD_PROBE, str(path)], {**ctx.env, **OFFLINE_ENV}, None,
                      float(ctx.catalog["defaults"]["hf_load_timeout_s"]))
    answer = probe.payload
    if answer is None:
        return finding(CHECK_ID, "broken", f"{path}: no answer ({probe.problem()})", path=str(path))
    if "no_transformers" in answer:
        return finding(CHECK_ID, "no_transformers", f"{path}: {answer['no_transformers']}", python=ctx.python)
    if "error" in answer:
        return finding(CHECK_ID, "broken" if offline else "incomplete", f"{path}: {answer['error']}",
                       path=str(path))
    loaded = (f"{path} loads offline: {answer['config']} ({answer['model_type']}), "
              f"{answer['tokenizer']} vocab {answer['vocab_size']}")
    if local is not None:
        return finding(CHECK_ID, "local_ok", loaded)
    if ctx.framework == "verl":
        return finding(CHECK_ID, "verl_no_model_path", f"MODEL_PATH {verl_model_path(ctx)} missing; {loaded}",
                       pin_remedy(ctx, path), path=str(verl_model_path(ctx)))
    return finding(CHECK_ID, "ok", loaded, pin_remedy(ctx, path))
