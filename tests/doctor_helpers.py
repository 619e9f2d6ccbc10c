"""Real parts for the doctor tests: git checkouts, megatron.bridge packages, a tiny HF hub snapshot."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    )
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
    trainer = trainers.BpeTrainer(
        vocab_size=120, special_tokens=["<unk>", "<|endoftext|>"], show_progress=False
    )
    corpus = [
        "the model answers math questions",
        "megatron bridge meets an rl loop",
        "twelve plus thirty is forty two",
        "offline snapshots load without the network",
    ] * 20
    tok.train_from_iterator(corpus, trainer)
    files = {
        "config.json": json.dumps(
            {
                "model_type": "gpt2",
                "vocab_size": tok.get_vocab_size(),
                "n_layer": 1,
                "n_head": 2,
                "n_embd": 8,
                "n_positions": 32,
            }
        ),
        "tokenizer.json": tok.to_str(),
        "tokenizer_config.json": json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "unk_token": "<unk>",
                "eos_token": "<|endoftext|>",
                "model_max_length": 32,
            }
        ),
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
    for name in (
        "PYTHONPATH",
        "RAY_ADDRESS",
        "HF_HOME",
        "HF_HUB_CACHE",
        "HUGGINGFACE_HUB_CACHE",
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "CUDA_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
        "MODEL_PATH",
        "MODEL_ID",
        "VERL_USE_UV",
        "TRAIN_FILES",
        "VAL_FILES",
        "RM_MODEL_PATH",
        "TORCH_CUDA_ARCH_LIST",
        "NRL_FORCE_REBUILD_VENVS",
        "BRIDGE_REPO",
        "NEMO_RL_REPO",
        "VERL_REPO",
        "RAY_TMPDIR",
    ):
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


# A stand-in for `uv` on PATH: a real script that does what uv does for the doctor's calls, in a real
# project environment (<project>/.venv made by make_project_env). `uv sync --dry-run` prints, on stderr,
# the lines real uv 0.13 prints (taken from a real run); which ones is read from $FAKE_UV_SYNC
# ("in_sync", "download" or "offline_error"). Every call is appended to $FAKE_UV_LOG as a JSON list.
FAKE_UV = r"""#!{python}
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
log = os.environ.get("FAKE_UV_LOG")
if log:
    with open(log, "a") as fh:
        fh.write(json.dumps({{"argv": args, "cwd": os.getcwd()}}) + "\n")
def project():
    p = Path.cwd()
    while not (p / "pyproject.toml").is_file():
        if p.parent == p:
            return None
        p = p.parent
    return p
if args[:1] == ["--version"]:
    print("uv 0.13.9")
    raise SystemExit(0)
if args[:1] == ["sync"]:
    mode = os.environ.get("FAKE_UV_SYNC", "in_sync")
    venv = os.environ.get("UV_PROJECT_ENVIRONMENT", ".venv")
    err = sys.stderr
    err.write(f"Would use project environment at: {{venv}}\n")
    if mode == "offline_error":
        err.write("error: No solution found when resolving dependencies\n  cause: Because torch was not found in the "
                  "cache and your project depends on torch, we can conclude that your project's requirements are "
                  "unsatisfiable.\n\nhint: Packages were unavailable because the network was disabled. When the "
                  "network is disabled, registry packages may only be read from the cache.\n")
        raise SystemExit(1)
    err.write("Resolved 321 packages in 5ms\nFound up-to-date lockfile at: uv.lock\n")
    if mode == "download":
        err.write("Would download 300 packages\nWould install 300 packages\n")
        err.write("".join(f" + package-number-{{i}}==1.0.{{i}}\n" for i in range(300)))
    else:
        err.write("Checked in 0.00ms\nWould make no changes\n")
    raise SystemExit(0)
if args[:1] == ["run"]:
    rest = args[1:]
    value_flags = {{"--extra", "--group", "--only-group", "--with", "--package", "--python", "-p"}}
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in value_flags else rest[1:]
    root = project()
    env_dir = (root / os.environ.get("UV_PROJECT_ENVIRONMENT", ".venv")) if root else None
    if rest and rest[0] in ("python", "python3") and env_dir is not None:
        os.execv(str(env_dir / "bin" / "python"), [str(env_dir / "bin" / "python"), *rest[1:]])
    os.execvp(rest[0], rest)
sys.stderr.write(f"error: unrecognized subcommand {{args[:1]}}\n")
raise SystemExit(2)
"""


def install_fake_uv(bindir: Path) -> Path:
    """`uv` (the stand-in above) in `bindir`; put `bindir` first on PATH."""
    import sys

    bindir.mkdir(parents=True, exist_ok=True)
    uv = bindir / "uv"
    uv.write_text(FAKE_UV.format(python=sys.executable))
    uv.chmod(0o755)
    return uv


def make_project_env(project: Path) -> Path:
    """`<project>/.venv`: a real virtual environment (python -m venv) whose site-packages also sees the
    test interpreter's packages (a .pth line), as a synced uv environment would hold them."""
    import site
    import sys

    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")],
        check=True,
        capture_output=True,
    )
    purelib = next((project / ".venv" / "lib").glob("python3*/site-packages"))
    (purelib / "console_test_parent.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return project / ".venv" / "bin" / "python"
