"""The one command renderer and the one remedy formatter (console.plan.render), as every view uses them."""

from __future__ import annotations

import os
import subprocess

import pytest

from console.commandtext import command_line, remedy_text, shell_line

pytestmark = pytest.mark.timeout(60)


def test_shell_line_runs_as_written_in_bash() -> None:
    """``env -u`` comes before the assignments (GNU env takes options first), quoting survives bash."""
    line = shell_line(
        ["sh", "-c", 'printf "%s|%s|%s" "$K" "${GONE-unset}" "$1"', "sh", "it's {x}"],
        {"K": "a b;c"},
        ["GONE"],
    )
    assert line.startswith("env -u GONE K='a b;c' sh -c ")
    out = subprocess.run(
        ["bash", "-c", line], env={**os.environ, "GONE": "here"}, capture_output=True, text=True, check=True
    )
    assert out.stdout == "a b;c|unset|it's {x}"
    assert shell_line(["true"]) == "true"  # nothing set or unset: no env word


def test_command_line_masks_secrets_and_fills_the_run_folder() -> None:
    step = {
        "argv": ["python", "train.py", "--hf-token", "hf_abcdefghijklmnopqrstuvwx", "out={run_dir}/x"],
        "env": {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwx", "LOGDIR": "{run_dir}/logs"},
        "unset": ["ROCR_VISIBLE_DEVICES"],
    }
    line = command_line(step, "/runs/r 1")
    assert "hf_abcdefghijklmnopqrstuvwx" not in line
    assert line == (
        "env -u ROCR_VISIBLE_DEVICES HF_TOKEN='***' LOGDIR='/runs/r 1/logs' "
        "python train.py --hf-token '***' 'out=/runs/r 1/x'"
    )
    assert command_line(step).endswith("'out={run_dir}/x'")  # no run folder yet: the placeholder stays


def test_remedy_text_says_every_part_once_in_one_order() -> None:
    remedy = {
        "env": {"HF_HUB_OFFLINE": "1", "WANDB_API_KEY": "abcd1234efgh", "ARCH": "8.0;9.0"},
        "unset": ["ROCR_VISIBLE_DEVICES"],
        "overrides": ["policy.train_micro_batch_size=1"],
        "commands": [["hf", "download", "Qwen/Qwen3-0.6B", "--local-dir", "/models/q 1"]],
        "class": "hf_offline_missing",
    }
    text = remedy_text(remedy)
    assert text == (
        "unset ROCR_VISIBLE_DEVICES, HF_HUB_OFFLINE=1, WANDB_API_KEY='***', ARCH='8.0;9.0', "
        "policy.train_micro_batch_size=1, hf download Qwen/Qwen3-0.6B --local-dir '/models/q 1'"
    )
    assert remedy_text({"env": {}, "overrides": [], "unset": []}) == "" == remedy_text(None)
