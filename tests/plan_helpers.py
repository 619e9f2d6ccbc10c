"""Shared fixtures for the plan/catalog/overrides tests: real git checkouts in a temp dir."""

from __future__ import annotations

import subprocess
from pathlib import Path

from console.spec import RunSpec


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def make_repos(tmp: Path) -> tuple[str, str, str]:
    """(bridge, nemo-rl, verl) git checkouts."""
    return (
        str(git_repo(tmp / "Megatron-Bridge")),
        str(git_repo(tmp / "nemo-rl")),
        str(git_repo(tmp / "verl")),
    )


def spec(framework: str, repos: tuple[str, str, str], levels=(0,), variants=(), **kw) -> RunSpec:
    bridge, nemo, verl = repos
    repo = {"nemo-rl": nemo, "verl": verl}.get(framework)
    return RunSpec(
        framework=framework,
        levels=list(levels),
        variants=list(variants),
        bridge_repo=bridge if framework != "demo" else None,
        repo=repo,
        **kw,
    )


NEMO_CONFIG_PARENT = """\
grpo:
  num_prompts_per_step: 32
  max_num_steps: 1000000
policy:
  model_name: "Qwen/Qwen2.5-1.5B"
  train_micro_batch_size: 4
  logprob_batch_size: ${policy.train_micro_batch_size}
  megatron_cfg:
    enabled: false
    tensor_model_parallel_size: 1
  generation:
    backend: "vllm"
data:
  shuffle: true
  train:
    dataset_name: "OpenMathInstruct-2"
logger:
  log_dir: logs
cluster:
  gpus_per_node: 1
checkpointing:
  enabled: false
"""

NEMO_CONFIG_CHILD = """\
defaults: "grpo_math_1B.yaml"
policy:
  megatron_cfg:
    enabled: true
    sequence_parallel: false
    peft:
      enabled: false
"""


def write_nemo_configs(repo: str) -> None:
    d = Path(repo) / "examples" / "configs"
    d.mkdir(parents=True, exist_ok=True)
    (d / "grpo_math_1B.yaml").write_text(NEMO_CONFIG_PARENT)
    (d / "grpo_math_1B_megatron.yaml").write_text(NEMO_CONFIG_CHILD)
