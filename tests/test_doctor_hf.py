"""hf_snapshot: a tiny snapshot (gpt2 config + a tokenizer trained with `tokenizers`) in the hub cache
layout, loaded offline by transformers in a subprocess."""

from __future__ import annotations

import re

import pytest
from doctor_helpers import assert_check_shape, by_id, clean_env, make_hf_snapshot

from console.doctor import run_doctor
from console.doctor.catalog import doctor_catalog
from console.doctor.context import build_context
from console.doctor.hf import snapshot_dir, step_models
from console.plan import build_plan
from console.spec import RunSpec
from tests.plan_helpers import make_repos

pytestmark = pytest.mark.timeout(180)
MODEL = "tiny-org/Tiny-0.5B"


def _check(spec: RunSpec) -> dict:
    return by_id(run_doctor(spec, checks=["hf_snapshot"]))["hf_snapshot"]


def test_snapshot_loads_offline_and_remedy_pins_it(tmp_path, monkeypatch):
    cache = tmp_path / "hf" / "hub"
    clean_env(monkeypatch, HF_HOME=str(tmp_path / "hf"))
    snap = make_hf_snapshot(cache, MODEL)
    assert snapshot_dir(cache, MODEL) == snap
    check = _check(RunSpec(framework="nemo-rl", model=MODEL))
    assert_check_shape(check)
    assert check["status"] == "ok", check
    assert "GPT2Config (gpt2)" in check["evidence"]
    assert re.search(r"\w+ vocab \d{2,}", check["evidence"]), check["evidence"]  # the trained tokenizer
    remedy = check["remedy"]
    assert remedy["env"] == {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    assert remedy["overrides"] == [f"policy.model_name={snap}", f"policy.tokenizer.name={snap}"]
    # verl's wrapper reads MODEL_PATH (default ~/models/<id>) and downloads nothing: pin the snapshot there.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    check = _check(RunSpec(framework="verl", model=MODEL))
    assert check["status"] == "block", check
    assert check["remedy"]["env"]["MODEL_PATH"] == str(snap)
    # With the remedy applied, the local path itself is loaded.
    check = _check(RunSpec(framework="verl", model=MODEL, env={"MODEL_PATH": str(snap)}))
    assert check["status"] == "ok" and str(snap) in check["evidence"]


def test_verl_without_model_path_or_snapshot_blocks(tmp_path, monkeypatch):
    clean_env(monkeypatch, HOME=str(tmp_path), HF_HUB_CACHE=str(tmp_path / "hub"))
    check = _check(RunSpec(framework="verl", model="someone/absent-1B"))
    assert check["status"] == "block"
    assert check["remedy"]["commands"] == [
        [
            "hf",
            "download",
            "someone/absent-1B",
            "--local-dir",
            str(tmp_path / "models" / "someone" / "absent-1B"),
        ]
    ]


def test_missing_snapshot_warns_and_blocks_offline(tmp_path, monkeypatch):
    clean_env(monkeypatch, HF_HUB_CACHE=str(tmp_path / "empty"))
    check = _check(RunSpec(framework="nemo-rl", model="someone/absent-1B"))
    assert check["status"] == "warn"
    assert "hf download someone/absent-1B" in check["advice"]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert _check(RunSpec(framework="nemo-rl", model="someone/absent-1B"))["status"] == "block"


def test_broken_snapshot_is_caught(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    clean_env(monkeypatch, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1")
    snap = make_hf_snapshot(cache, MODEL)
    (snap / "tokenizer.json").unlink()  # an interrupted download
    (snap / "config.json").unlink()
    check = _check(RunSpec(framework="nemo-rl", model=MODEL))
    assert check["status"] == "block", check
    assert str(snap) in check["evidence"]


def test_demo_is_not_applicable(monkeypatch):
    clean_env(monkeypatch)
    check = _check(RunSpec(framework="demo"))
    assert check["status"] == "ok" and check["evidence"] == "not applicable to the demo"


# the model each selected level's wrapper downloads ----------------------------------------------


def _nemo(repos, levels, variants=(), **kw) -> RunSpec:
    bridge, nemo, _ = repos
    return RunSpec(
        framework="nemo-rl", levels=list(levels), variants=list(variants), bridge_repo=bridge, repo=nemo, **kw
    )


def test_each_level_checks_its_wrappers_model(tmp_path, monkeypatch):
    """Level 1 runs grpo_megatron_lora.sh (Qwen2.5-0.5B) and sft_resume_diamond.sh (Qwen3-0.6B)."""
    cache = tmp_path / "hf" / "hub"
    clean_env(monkeypatch, HF_HOME=str(tmp_path / "hf"))
    repos = make_repos(tmp_path)
    spec = _nemo(repos, (1,))
    plan = build_plan(spec)
    assert step_models(build_context(spec, plan)) == {
        "Qwen/Qwen2.5-0.5B": ["l1-grpo-megatron-lora"],
        "Qwen/Qwen3-0.6B": ["l1-sft-resume-diamond"],
    }
    make_hf_snapshot(cache, "Qwen/Qwen2.5-0.5B")
    check = by_id(run_doctor(spec, plan, checks=["hf_snapshot"]))["hf_snapshot"]
    assert_check_shape(check)
    assert check["status"] == "warn", check
    assert "Qwen/Qwen3-0.6B (l1-sft-resume-diamond): no snapshot" in check["evidence"]
    assert "Qwen/Qwen2.5-0.5B (l1-grpo-megatron-lora) loads offline" in check["evidence"]
    assert "hf download Qwen/Qwen3-0.6B" in check["advice"]
    make_hf_snapshot(cache, "Qwen/Qwen3-0.6B")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    check = by_id(run_doctor(spec, plan, checks=["hf_snapshot"]))["hf_snapshot"]
    assert check["status"] == "ok", check
    assert check["remedy"]["env"] == {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    assert check["remedy"]["overrides"] == []  # two models: no single policy.model_name pin


def test_model_override_and_wrapper_variables_win(tmp_path, monkeypatch):
    clean_env(monkeypatch)
    repos = make_repos(tmp_path)
    spec = _nemo(repos, (1,), model="org/Mine-1B")
    assert step_models(build_context(spec, build_plan(spec))) == {
        "org/Mine-1B": ["l1-grpo-megatron-lora", "l1-sft-resume-diamond"]
    }
    spec = _nemo(repos, (5,), ("eagle-mtp",), env={"NRL_EAGLE3_DRAFT_MODEL": "org/Draft"})
    assert step_models(build_context(spec, build_plan(spec))) == {
        "Qwen/Qwen3-1.7B": ["l5-grpo-megatron-eagle3"],
        "org/Draft": ["l5-grpo-megatron-eagle3"],
    }
    spec = _nemo(repos, (5,), ("vlm",))
    assert list(step_models(build_context(spec, build_plan(spec)))) == ["Qwen/Qwen2.5-VL-3B-Instruct"]
    spec = _nemo(repos, (2,))  # examples/run_grpo.py directly: the catalog's own policy.model_name
    assert list(step_models(build_context(spec, build_plan(spec)))) == ["Qwen/Qwen2.5-0.5B"]


def test_wrapper_models_record_their_upstream_commit():
    table = doctor_catalog()["wrapper_models"]
    assert set(table["verified"]) == {"nemo-rl", "verl"} and all(
        len(c) == 40 for c in table["verified"].values()
    )
    scripts = {w["script"] for w in table["nemo-rl"]}
    assert "tests/functional/sft_resume_diamond.sh" in scripts and "tests/functional/vlm_grpo.sh" in scripts


def _wrapper_text(models: list[dict]) -> str:
    lines = ["#!/bin/bash", "set -eou pipefail"]
    args = []
    for i, m in enumerate(models):
        if m.get("env") and m.get("key"):
            lines.append(f"M{i}=${{{m['env']}:-{m['default']}}}")
            args.append(f'    {m["key"]}="$M{i}" \\')
        elif m.get("env"):
            lines.append(f"{m['env']}=${{{m['env']}:-{m['default']}}}")
        else:
            args.append(f"    {m['key']}={m['default']} \\")
    return "\n".join([*lines, "uv run examples/run_grpo.py \\", *args, "    $@", ""])


def test_check_upstream_compares_wrapper_models_with_the_checkout(tmp_path):
    """scripts/check_upstream.py reads the models from the wrappers themselves (real git checkouts here)."""
    import importlib.util

    from doctor_helpers import git, make_git_repo

    loader = importlib.util.spec_from_file_location("check_upstream", "scripts/check_upstream.py")
    mod = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(mod)
    table = doctor_catalog()["wrapper_models"]
    repos = {}
    for fw in ("nemo-rl", "verl"):
        repos[fw] = str(
            make_git_repo(tmp_path / fw, {w["script"]: _wrapper_text(w["models"]) for w in table[fw]})
        )
    repos["bridge"] = repos["verl"]
    found = mod.wrapper_model_mismatches(repos)
    assert [f for f in found if "verified at" not in f] == []  # every model read back from the wrappers
    assert len([f for f in found if "verified at" in f]) == 2  # these checkouts are not the verified commits
    sft = tmp_path / "nemo-rl" / "tests/functional/sft_resume_diamond.sh"
    sft.write_text(sft.read_text().replace("Qwen/Qwen3-0.6B", "Qwen/Qwen3-1.7B"))
    git(tmp_path / "nemo-rl", "commit", "-qam", "switch model")
    found = [f for f in mod.wrapper_model_mismatches(repos) if "verified at" not in f]
    assert found == [
        "wrapper_models nemo-rl tests/functional/sft_resume_diamond.sh policy: doctor.toml has "
        "-:Qwen/Qwen3-0.6B, the wrapper -:Qwen/Qwen3-1.7B"
    ]
