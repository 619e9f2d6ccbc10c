"""`rl-console compare` on replayed NeMo-RL and verl logs (written here in their real formats, see
reference/notes-nemo-rl.md §3.2 and notes-verl.md §2.3-2.4): the numbers come from the log parsers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from runs_support import cli, reap_runs, wait_finished

pytestmark = [pytest.mark.timeout(240)]
STEPS = 6


def nemo_rl_log(loss_shift: float = 0.0, from_step: int = 99, slow: float = 1.0) -> str:
    out = [
        "Loaded configuration from: examples/configs/grpo_math_1B_megatron.yaml",
        "Overrides: ['policy.model_name=Qwen/Qwen2.5-0.5B', 'grpo.num_prompts_per_step=2', "
        f"'grpo.max_num_steps={STEPS}', 'cluster.gpus_per_node=2']",
        "Initialized TensorboardLogger at tests/functional/grpo_megatron/logs/exp_001",
        "",
        "=" * 60,
        " " * 18 + "SETUP COMPLETE",
        "  Total setup time: 61.2s",
        "=" * 60,
        "",
        "🚀 Running synchronous GRPO training (legacy)",
    ]
    for s in range(1, STEPS + 1):
        shift = loss_shift if s >= from_step else 0.0
        total = (14.0 + 0.1 * s) * slow
        out += [
            "",
            f"{'=' * 25} Step {s}/{STEPS} {'=' * 25}",
            "▶ Preparing batch...",
            "▶ Generating responses for batch of size 16...",
            "▶ Processing rewards...,",
            "▶ Computing advantages...",
            "▶ Computing logprobs...",
            "▶ Preparing for training...",
            "▶ Training policy...",
            "",
            "📊 Training Results:",
            f"  • Loss: {0.0500 - 0.005 * s + shift:.4f}",
            f"  • Generation KL Error: {0.0008 + 0.0001 * s:.4f}",
            f"  • Avg Reward: {0.2500 + 0.04 * s + shift:.4f}",
            f"  • Mean Generation Length: {210.0 + s:.4f}",
            "",
            "⏱️  Timing:",
            f"  • Total step time: {total:.2f}s",
            f"  • policy_training: {total * 0.4:.2f}s (40.0%)",
            f"  • generation: {total * 0.35:.2f}s (35.0%)",
        ]
    out += ["Max number of steps has been reached, stopping training early"]
    return "\n".join(out) + "\n"


def verl_log(change: float = 0.0, from_step: int = 99, slow: float = 1.0) -> str:
    out = [
        "+ python3 -m verl.trainer.main_ppo --config-path=config --config-name=ppo_megatron_trainer.yaml",
        "(TaskRunner pid=2016251) [validate_config] All configuration checks passed successfully!",
        f"(TaskRunner pid=2016251) INFO:2026-08-22 10:00:00,123:Total training steps: {STEPS}",
        "(TaskRunner pid=2016251) INFO:2026-08-22 10:00:01,000:all initialize finished, ready to fit",
        "(TaskRunner pid=2016251) step:0 - val-core/openai/gsm8k/acc/mean@1:np.float64(0.508)",
    ]
    for s in range(1, STEPS + 1):
        c = change if s >= from_step else 0.0
        step_t = (10.5 + 0.1 * s) * slow
        out.append(
            f"(TaskRunner pid=2016251) step:{s} - actor/entropy:np.float64({0.52 - 0.01 * s + c:.6f}) - "
            f"actor/kl_loss:np.float64(0.00{s}) - actor/pg_loss:np.float64({0.0123 + 0.001 * s + c:.6f}) - "
            f"actor/grad_norm:np.float64({0.05 + 0.002 * s:.6f}) - actor/lr:3e-06 - "
            f"critic/score/mean:np.float64({0.25 + 0.05 * s + c:.6f}) - "
            f"response_length/mean:np.float64({180.0 + s:.1f}) - timing_s/gen:np.float64({4.2 * slow:.3f}) - "
            f"timing_s/update_actor:np.float64({3.1 * slow:.3f}) - timing_s/step:np.float64({step_t:.3f}) - "
            f"perf/throughput:np.float64({1234.5 / slow:.2f}) - "
            f"perf/max_memory_allocated_gb:39.73102807998657 - training/global_step:{s} - training/epoch:0"
        )
        pct = int(100 * s / STEPS)
        out.append(
            f"Training Progress: {pct:3d}%|███▎      | {s}/{STEPS} [00:{10 * s:02d}<00:10, {step_t:.2f}s/it]"
        )
    out.append("(TaskRunner pid=2016251) 'Final validation metrics: None'")
    return "\n".join(out) + "\n"


@pytest.fixture
def runs_dir(tmp_path: Path):
    d = tmp_path / "runs"
    yield d
    assert reap_runs(d) == []


def replay(runs: Path, log: Path, framework: str) -> Path:
    res = cli(
        "replay", str(log), "--framework", framework, "--speed", "50", "--detach", "--runs-dir", str(runs)
    )
    assert res.returncode == 0, res.stderr
    run_dir = Path(res.stdout.split("started: ", 1)[1].strip())
    wait_finished(run_dir, timeout=120)
    return run_dir


def compare(runs: Path, a: Path, b: Path) -> tuple[int, dict]:
    res = cli("compare", a.name, b.name, "--runs-dir", str(runs), "--json")
    assert res.returncode in (0, 1, 3), res.stderr
    return res.returncode, json.loads(res.stdout)


@pytest.mark.parametrize("framework", ["nemo-rl", "verl"])
def test_replayed_log_pairs(tmp_path: Path, runs_dir: Path, framework: str) -> None:
    write = nemo_rl_log if framework == "nemo-rl" else verl_log
    logs = {"base": write(), "same": write(), "changed": write(0.05, from_step=4, slow=1.4)}
    runs = {}
    for name, text in logs.items():
        path = tmp_path / f"{framework}-{name}.log"
        path.write_text(text, encoding="utf-8")
        runs[name] = replay(runs_dir, path, framework)

    code, same = compare(runs_dir, runs["base"], runs["same"])
    assert (code, same["verdict"]) == (0, "Same"), same["reasons"]
    assert same["framework"] == framework and same["common_steps"] == STEPS
    assert same["baseline"]["source"] == "log" and same["match"]["identical"] is True

    code, ch = compare(runs_dir, runs["base"], runs["changed"])
    assert (code, ch["verdict"]) == (1, "Changed"), ch["reasons"]
    moved = {r["key"]: r["first_divergence"] for r in ch["metrics"] if not r["within"]}
    if framework == "nemo-rl":
        assert moved == {"loss": 4, "reward": 4}
        assert ch["timing_regressions"] == ["step time (s)"]
    else:
        assert moved == {"pg_loss": 4, "reward": 4, "entropy": 4}
        # validation at step:0 is not a training step; grad norm and lr match at every step
        assert ch["common_steps"] == STEPS
        assert set(ch["timing_regressions"]) == {
            "step time (s)",
            "tokens/s/GPU",
            "generation (s)",
            "update actor (s)",
        }
    assert "from step 4" in ch["reasons"][0]
