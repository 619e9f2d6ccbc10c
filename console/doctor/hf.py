"""`hf_snapshot`: the model and tokenizer are in the HF hub cache and load offline."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from console.catalog.schema import WrapperModel
from console.doctor.context import DoctorContext
from console.doctor.interpreter import python_argv
from console.doctor.model import Check, Remedy
from console.doctor.probe import MARKER, ProbeResult, run_probe
from console.doctor.result import NOT_APPLICABLE_DEMO, Item, advice_for, combine, finding, make_remedy

CHECK_ID = "hf_snapshot"
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

# argv: snapshot paths. Loads each config and tokenizer with local_files_only=True, as the procedure
# shows; prints {path: answer} once at the end.
LOAD_PROBE = f"""
import json, sys
try:
    from transformers import AutoConfig, AutoTokenizer
except ModuleNotFoundError as exc:
    print({MARKER!r} + json.dumps({{"no_transformers": str(exc)}}), flush=True)
    raise SystemExit(0)
out = {{}}
for path in sys.argv[1:]:
    try:
        config = AutoConfig.from_pretrained(path, trust_remote_code=True, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=True, local_files_only=True)
    except BaseException as exc:
        out[path] = {{"error": type(exc).__name__ + ": " + str(exc)[:500]}}
        continue
    out[path] = {{"config": type(config).__name__, "model_type": getattr(config, "model_type", None),
                 "tokenizer": type(tokenizer).__name__, "vocab_size": tokenizer.vocab_size}}
print({MARKER!r} + json.dumps({{"paths": out}}), flush=True)
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


def pin_remedy(ctx: DoctorContext, path: Path) -> Remedy:
    """Switch the run to the snapshot path, offline."""
    if ctx.framework == "nemo-rl":
        return make_remedy(
            env=OFFLINE_ENV, overrides=[f"policy.model_name={path}", f"policy.tokenizer.name={path}"]
        )
    return make_remedy(env={**OFFLINE_ENV, "MODEL_PATH": str(path)})


def _override(argv: list[str], key: str) -> str | None:
    """The value Hydra ends with for `key` in an argv (the last `key=`, `+key=` or `++key=` wins)."""
    values = [v for k, sep, v in (str(a).partition("=") for a in argv) if sep and k.lstrip("+") == key]
    return values[-1].strip("'\"") if values else None


def step_models(ctx: DoctorContext) -> dict[str, list[str]]:
    """{model: [plan steps that load it]}: the models each training step's wrapper downloads.

    Which model a wrapper uses is upstream fact ([wrapper_models] in doctor.toml, with the commit);
    a `key=value` later in the step's argv (the catalog's, --model's, the user's) or the wrapper's
    variable in the step's environment replaces it."""
    scripts = ctx.catalog["wrapper_models"].get(ctx.framework, [])  # a list, except for "verified"
    table = {w["script"]: w["models"] for w in scripts} if isinstance(scripts, list) else {}
    out: dict[str, list[str]] = {}
    for step in ctx.steps():
        if step.get("kind") != "train":
            continue
        argv = [str(a) for a in step.get("argv") or []]
        env = {**ctx.env, **{k: str(v) for k, v in (step.get("env") or {}).items()}}
        script = next((a for a in argv if a.endswith(".sh")), None)
        entries: list[WrapperModel] = table.get(
            script or "", [{"role": "policy", "key": "policy.model_name"}]
        )
        for entry in entries:
            model = (
                (_override(argv, entry["key"]) if entry.get("key") else None)
                or (env.get(entry["env"]) if entry.get("env") else None)
                or entry.get("default")
            )
            if model and "$" not in model and "{" not in model:
                out.setdefault(model, []).append(str(step.get("name")))
    return out


def _load(ctx: DoctorContext, paths: list[Path]) -> tuple[ProbeResult, str]:
    argv, label = python_argv(ctx)
    probe = run_probe(
        [*argv, "-c", LOAD_PROBE, *map(str, paths)],
        {**ctx.env, **OFFLINE_ENV},
        None,
        float(ctx.catalog["defaults"]["hf_load_timeout_s"]) * max(1, len(paths)),
    )
    return probe, label


def check_hf_snapshot(ctx: DoctorContext) -> Check:
    if ctx.is_demo:
        return finding(CHECK_ID, "not_applicable", NOT_APPLICABLE_DEMO)
    if ctx.framework == "nemo-rl":
        models = step_models(ctx)
        if len(models) > 1:
            return check_models(ctx, models)
        if models:
            first, steps = next(iter(models.items()))
            return check_one(ctx, first, f" ({', '.join(steps)})")
    model = ctx.model()
    if ctx.framework == "verl" and not ctx.spec.model and not ctx.setting("MODEL_ID"):
        model = next(iter(step_models(ctx)), None) or model
    if not model:
        return finding(CHECK_ID, "not_applicable", "no model")
    return check_one(ctx, model, "")


def _offline(ctx: DoctorContext) -> bool:
    return any(ctx.env.get(name, "") not in ("", "0") for name in OFFLINE_ENV)


def check_models(ctx: DoctorContext, models: dict[str, list[str]]) -> Check:
    """Several models (one per selected level's wrapper): each must be in the cache and load offline."""
    cache = hub_cache(ctx.env)
    offline = _offline(ctx)
    items: list[Item] = []
    found: dict[str, Path] = {}
    for model, steps in models.items():
        path = local_model_path(ctx, model) or snapshot_dir(cache, model)
        if path is None:
            items.append(
                Item(
                    "missing_offline" if offline else "missing",
                    f"{model} ({', '.join(steps)}): no snapshot under {cache}",
                    facts={"model": model, "cache": str(cache)},
                )
            )
        else:
            found[model] = path
    if found:
        probe, label = _load(ctx, list(found.values()))
        answers = (probe.payload or {}).get("paths") or {}
        for model, path in found.items():
            at = f"{model} ({', '.join(models[model])}) at {path}"
            answer = answers.get(str(path))
            facts = {"path": str(path)}
            if probe.payload and "no_transformers" in probe.payload:
                why = probe.payload["no_transformers"]
                items.append(Item("no_transformers", f"{at}: {why}", facts={"python": label}))
            elif answer is None:
                items.append(Item("broken", f"{at}: no answer ({probe.problem()})", facts=facts))
            elif "error" in answer:
                items.append(
                    Item("broken" if offline else "incomplete", f"{at}: {answer['error']}", facts=facts)
                )
            else:
                items.append(
                    Item(
                        "ok",
                        f"{model} ({', '.join(models[model])}) loads offline from {path}: {_loaded(answer)}",
                    )
                )
    entry = combine(CHECK_ID, items)
    if entry["status"] == "ok":  # every model is cached and loads: the ids resolve offline
        entry["remedy"] = make_remedy(env=OFFLINE_ENV)
        entry["advice"] = advice_for(CHECK_ID, "ok")[1]
    return entry


def _loaded(answer: dict[str, Any]) -> str:
    """What the load probe read: config class and model type, tokenizer class and vocabulary size."""
    return f"{answer['config']} ({answer['model_type']}), {answer['tokenizer']} vocab {answer['vocab_size']}"


def check_one(ctx: DoctorContext, model: str, steps: str) -> Check:
    cache = hub_cache(ctx.env)
    local = local_model_path(ctx, model)
    path = local or snapshot_dir(cache, model)
    offline = _offline(ctx)
    if path is None and ctx.framework == "verl":  # (local is None too: path would be it)
        wanted = str(verl_model_path(ctx))
        download = make_remedy(commands=[["hf", "download", model, "--local-dir", wanted]])
        evidence = f"{model}: no MODEL_PATH {wanted} and no snapshot under {cache}"
        return finding(CHECK_ID, "verl_missing", evidence, download, model=model, path=wanted)
    if path is None:
        case = "missing_offline" if offline else "missing"
        evidence = f"{model}{steps}: no snapshot under {cache}"
        return finding(CHECK_ID, case, evidence, model=model, cache=str(cache))
    probe, label = _load(ctx, [path])
    answer = probe.payload
    if answer is not None and "paths" in answer:
        answer = answer["paths"].get(str(path))
    if answer is None:
        return finding(CHECK_ID, "broken", f"{path}: no answer ({probe.problem()})", path=str(path))
    if "no_transformers" in answer:
        return finding(CHECK_ID, "no_transformers", f"{path}: {answer['no_transformers']}", python=label)
    if "error" in answer:
        return finding(
            CHECK_ID, "broken" if offline else "incomplete", f"{path}: {answer['error']}", path=str(path)
        )
    loaded = f"{model}{steps}: {path} loads offline: {_loaded(answer)}"
    if local is not None:
        return finding(CHECK_ID, "local_ok", loaded)
    if ctx.framework == "verl":
        return finding(
            CHECK_ID,
            "verl_no_model_path",
            f"MODEL_PATH {verl_model_path(ctx)} missing; {loaded}",
            pin_remedy(ctx, path),
            path=str(verl_model_path(ctx)),
        )
    return finding(CHECK_ID, "ok", loaded, pin_remedy(ctx, path))
