"""Real parts for the doctor tests: git checkouts, megatron.bridge packages, a tiny HF hub snapshot."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                         env={**os.environ, **GIT_ENV})
    return out.stdout.strip()


def make_git_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        f = path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init")
    return path


def make_bridge(path: Path, with_package: bool = True) -> Path:
    """A Megatron-Bridge checkout: src/megatron/bridge (a namespace `megatron`, like the real tree)."""
    files = {"README.md": "bridge\n"}
    if with_package:
        files["src/megatron/bridge/__init__.py"] = "WHERE = 'checkout under test'\n"
    return make_git_repo(path, files)


def place_decoy(root: Path) -> Path:
    """A `megatron/bridge` package outside the Bridge checkout (e.g. an installed wheel)."""
    pkg = root / "megatron" / "bridge"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("WHERE = 'decoy'\n")
    return root


def make_hf_snapshot(cache: Path, model: str, revision: str = "main") -> Path:
    """A tiny model in the hub cache layout: blobs, refs/main, snapshots/<sha>/ links.

    config.json is a 1-layer gpt2 config; the tokenizer is trained here with `tokenizers`.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=120, special_tokens=["<unk>", "<|endoftext|>"], show_progress=False)
    corpus = ["the model answers math questions", "megatron bridge meets an rl loop",
              "twelve plus thirty is forty two", "offline snapshots load without the network"] * 20
    tok.train_from_iterator(corpus, trainer)
    files = {
        "config.json": json.dumps({"model_type": "gpt2", "vocab_size": tok.get_vocab_size(), "n_layer": 1,
                                   "n_head": 2, "n_embd": 8, "n_positions": 32}),
        "tokenizer.json": tok.to_str(),
        "tokenizer_config.json": json.dumps({"tokenizer_class": "PreTrainedTokenizerFast",
                                             "unk_token": "<unk>", "eos_token": "<|endoftext|>",
                                             "model_max_length": 32}),
    }
    repo = cache / ("models--" + model.replace("/", "--"))
    sha = hashlib.sha1("".join(files.values()).encode()).hexdigest()
    snap = repo / "snapshots" / sha
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snap.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        blob = repo / "blobs" / hashlib.sha256(text.encode()).hexdigest()
        blob.write_text(text)
        (snap / name).symlink_to(os.path.relpath(blob, snap))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / revision).write_text(sha)
    return snap


def clean_env(monkeypatch, **extra: str) -> None:
    """Remove variables of the machine that would change the doctor's answers; set `extra`."""
    for name in ("PYTHONPATH", "RAY_ADDRESS", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE",
                 "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                 "HIP_VISIBLE_DEVICES", "MODEL_PATH", "MODEL_ID", "VERL_USE_UV", "TRAIN_FILES", "VAL_FILES",
                 "RM_MODEL_PATH", "TORCH_CUDA_ARCH_LIST", "NRL_FORCE_REBUILD_VENVS", "BRIDGE_REPO",
                 "NEMO_RL_REPO", "VERL_REPO", "RAY_TMPDIR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in extra.items():
        monkeypatch.setenv(name, value)


def by_id(result: dict) -> dict[str, dict]:
    return {c["id"]: c for c in result["checks"]}


def assert_check_shape(check: dict) -> None:
    assert set(check) == {"id", "status", "evidence", "advice", "remedy"}
    assert check["status"] in ("ok", "warn", "block")
    assert isinstance(check["evidence"], str) and check["evidence"]
    assert set(check["remedy"]) == {"env", "unset", "overrides", "commands"}
    assert all(isinstance(c, list) for c in check["remedy"]["commands"])
    if check["status"] != "ok":
        assert check["advice"], check
