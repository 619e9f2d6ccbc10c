"""The HF Trainer / LLaMA-Factory log-dict family of metric failures, on a real excerpt from the tuning split
of ``tests/corpus/cases-f.jsonl`` (``fixtures/triage/real/sources.json`` names the thread).

The trainer prints one dict per logging step (``{'loss': ..., 'grad_norm': ..., 'learning_rate': ...}``). A
zero loss next to a NaN grad norm is a dead update; a NaN grad norm next to a real loss alone is not decisive
(fp16 loss scaling skips such steps), so the family stops there.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from console.triage.scan import triage_files

sys.path.insert(0, str(Path(__file__).parent))
from triage_helpers import REAL, primary  # noqa: E402

pytestmark = pytest.mark.timeout(60)


def test_zero_loss_with_nan_grad_norm_is_a_metric_failure() -> None:
    res = triage_files([REAL / "hf_trainer_zero_loss_nan_grad_norm.log"])
    # the rule, or the metric watcher reading the quoted keys (NaN grad norm on consecutive steps)
    verdict, cls, rule = primary(res)
    assert (verdict, cls) == ("Fail", "metric_failure")
    assert rule in ("hf_trainer_zero_loss_nan_grad_norm", "metrics:grad_norm_nonfinite")
    rules = {f.get("rule") for f in res["findings"]}
    assert "hf_trainer_zero_loss_nan_grad_norm" in rules


def test_zero_loss_nan_grad_norm_without_braces_or_other_keys(tmp_path: Path) -> None:
    # the same dict quoted partly (corpus: a LoRA SFT report pasting only the two keys)
    path = tmp_path / "x.log"
    path.write_text("'loss': 0.000, 'grad_norm': nan\n")
    assert primary(triage_files([path]))[:2] == ("Fail", "metric_failure")


def test_a_lone_nan_grad_norm_with_a_real_loss_is_not_this_family(tmp_path: Path) -> None:
    # the first line of a real report (an fp16/NPU run) before its loss collapsed to 0: not decisive alone
    path = tmp_path / "x.log"
    path.write_text(
        "{'loss': 1.4596, 'grad_norm': nan, 'learning_rate': 4.552255167404752e-06, 'epoch': 0.66}\n"
    )
    res = triage_files([path])
    assert all(f["rule"] != "hf_trainer_zero_loss_nan_grad_norm" for f in res["findings"])
    assert res["verdict"] != "Fail"


def test_zero_loss_with_a_finite_grad_norm_is_not_a_failure(tmp_path: Path) -> None:
    # GRPO-style trainers log a loss of 0 routinely; with a finite grad norm that is a healthy step
    path = tmp_path / "x.log"
    path.write_text(
        "{'loss': 0.0, 'grad_norm': 0.9503731084601761, 'learning_rate': 5.521811154058532e-07}\n"
    )
    assert triage_files([path])["verdict"] != "Fail"
