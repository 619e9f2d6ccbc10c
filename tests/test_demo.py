"""The embedded demo workload through the real CLI: it learns and passes; ``nan`` really blows up and fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from runs_support import cli, reap_runs

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


@pytest.fixture
def runs_dir(tmp_path: Path):
    d = tmp_path / "runs"
    yield d
    assert reap_runs(d) == []


def only_run(runs_dir: Path) -> Path:
    (run_dir,) = [p for p in runs_dir.iterdir() if p.is_dir()]
    return run_dir


def test_demo_learns_and_passes(runs_dir: Path) -> None:
    res = cli("demo", "--headless", "--runs-dir", str(runs_dir), "--device", "cpu", timeout=200)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    lines = res.stdout.splitlines()
    assert lines[-1] == "Verdict: Pass"
    assert "demo-grpo | device: cpu" in lines
    assert "demo-grpo | ========================= Step 30/30 =========================" in lines
    assert "demo-grpo | Max number of steps has been reached, stopping training early" in lines
    assert any(line.startswith("[step ") and line.endswith("] demo-grpo") for line in lines)
    run_dir = only_run(runs_dir)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    reward = metrics["train/reward"]
    assert len(reward) == 30
    first = sum(reward[str(s)] for s in range(1, 4)) / 3
    last = sum(reward[str(s)] for s in range(28, 31)) / 3
    assert first < 0.4 and last > 0.7, reward  # it really learns
    assert max(metrics["train/token_mult_prob_error"].values()) < 1.05
    for tag in (
        "train/loss",
        "train/grad_norm",
        "train/kl",
        "train/gen_kl_error",
        "train/probs_ratio_clamped_min",
        "train/probs_ratio_clamped_max",
        "timing/train/total_step_time",
    ):
        assert len(metrics[tag]) == 30, tag
    assert list((run_dir / "tb").glob("events.out.tfevents.*"))
    state = json.loads((run_dir / "state.json").read_text())
    assert state["verdict"] == "Pass" and [s["status"] for s in state["steps"]] == ["passed"] * 3


def test_demo_nan_variant_fails_with_metric_failure(runs_dir: Path) -> None:
    res = cli(
        "demo", "--headless", "--variant", "nan", "--runs-dir", str(runs_dir), "--device", "cpu", timeout=200
    )
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr
    assert "Verdict: Fail" in res.stdout
    assert "Primary: metric_failure" in res.stdout
    run_dir = only_run(runs_dir)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    losses = list(metrics["train/loss"].values())
    # real non-finite values, as json.dump writes them (NaN / Infinity)
    assert all(str(v) in ("nan", "inf", "-inf", "NaN", "Infinity", "-Infinity") for v in losses[1:]), losses
    triage = json.loads((run_dir / "triage.json").read_text())
    assert triage["verdict"] == "Fail" and triage["primary"]["class"] == "metric_failure"
