"""hf_snapshot: a tiny snapshot (gpt2 config + a tokenizer trained with `tokenizers`) in the hub cache
layout, loaded offline by transformers in a subprocess."""

from __future__ import annotations

import re

import pytest
from doctor_helpers import assert_check_shape, by_id, clean_env, make_hf_snapshot

from console.doctor import run_doctor
from console.doctor.hf import snapshot_dir
from console.spec import RunSpec

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
    assert check["status"] == "ok" and check["evidence"].startswith(str(snap))


def test_verl_without_model_path_or_snapshot_blocks(tmp_path, monkeypatch):
    clean_env(monkeypatch, HOME=str(tmp_path), HF_HUB_CACHE=str(tmp_path / "hub"))
    check = _check(RunSpec(framework="verl", model="someone/absent-1B"))
    assert check["status"] == "block"
    assert check["remedy"]["commands"] == [["hf", "download", "someone/absent-1B", "--local-dir",
                                            str(tmp_path / "models" / "someone" / "absent-1B")]]


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
