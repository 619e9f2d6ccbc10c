"""The embedded demo workload: GRPO of a tiny transformer policy on a toy task, in PyTorch.

Run: ``python -u -m console.demo.grpo --tb-dir DIR [--steps N] [--variant nan] [--device auto|cpu|cuda]
[--seed S]``. It prints NeMo-RL-shaped step banners, phase lines and results blocks, and writes
TensorBoard scalars under NeMo-RL's tag names so the same monitor, metrics dump and checks apply.

The ``nan`` variant trains the same task with an absurd learning rate: the weights really blow up and
the loss and gradient norm really become NaN/inf (the run goes on and logs them).
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from console.demo import task
from console.demo.model import TinyPolicy, answer_logprobs, generate

BANNER = "=" * 25


@dataclass
class Config:
    steps: int = 30
    prompts_per_step: int = 48
    generations_per_prompt: int = 8
    lr: float = 2e-3
    minibatches: int = 2
    clip: float = 0.2
    kl_beta: float = 0.01
    max_grad_norm: float = 1.0
    seed: int = 42


VARIANT_LR = {"nan": 1e3}


def pick_device(choice: str) -> torch.device:
    if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise SystemExit("error: --device cuda but CUDA is not available")
        return torch.device("cuda:0")
    return torch.device("cpu")


def describe(device: torch.device) -> str:
    if device.type == "cuda":
        return f"device: cuda:0 ({torch.cuda.get_device_name(0)})"
    return "device: cpu"


def say(text: str = "") -> None:
    print(text, flush=True)


def grpo_step(policy: TinyPolicy, reference: TinyPolicy, opt: torch.optim.Optimizer, cfg: Config,
              gen: torch.Generator, device: torch.device, timings: dict[str, float]) -> dict[str, float]:
    """One GRPO step: sample groups, score them, compute group-relative advantages, clipped PG update."""
    n_prompts, group = cfg.prompts_per_step, cfg.generations_per_prompt
    prompt_len = task.PROMPT_LEN + 2

    t = time.perf_counter()
    say("▶ Preparing batch...")
    prompts = task.sample_prompts(n_prompts, gen).repeat_interleave(group, dim=0).to(device)
    timings["data_processing"] = time.perf_counter() - t

    t = time.perf_counter()
    say(f"▶ Generating responses for batch of size {prompts.shape[0]}...")
    policy.eval()
    seqs, gen_lp = generate(policy, prompts, task.PROMPT_LEN, gen)
    timings["generation"] = time.perf_counter() - t

    t = time.perf_counter()
    say("▶ Processing rewards...,")
    rewards = task.reward(prompts, seqs[:, prompt_len:])
    timings["reward_calculation"] = time.perf_counter() - t

    t = time.perf_counter()
    say("▶ Computing advantages...")
    grouped = rewards.view(n_prompts, group)
    adv = ((grouped - grouped.mean(1, keepdim=True)) / (grouped.std(1, keepdim=True) + 1e-4)).view(-1)
    timings["advantage_calculation"] = time.perf_counter() - t

    t = time.perf_counter()
    say("▶ Computing logprobs...")
    with torch.no_grad():
        old_lp = answer_logprobs(policy, seqs, prompt_len)
        ref_lp = answer_logprobs(reference, seqs, prompt_len)
    timings["policy_and_reference_logprobs"] = time.perf_counter() - t

    say("▶ Preparing for training...")
    t = time.perf_counter()
    say("▶ Training policy...")
    policy.train()
    order = torch.randperm(seqs.shape[0], generator=gen).to(device)
    losses, grad_norms, kls, rmin, rmax = [], [], [], [], []
    for chunk in order.chunk(cfg.minibatches):
        lp = answer_logprobs(policy, seqs[chunk], prompt_len)
        ratio = torch.exp(lp - old_lp[chunk])
        clamped = ratio.clamp(1 - cfg.clip, 1 + cfg.clip)
        a = adv[chunk, None]
        pg = -torch.minimum(ratio * a, clamped * a)
        log_r = ref_lp[chunk] - lp
        kl = torch.exp(log_r) - log_r - 1
        loss = (pg + cfg.kl_beta * kl).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)
        opt.step()
        losses.append(loss.item())
        grad_norms.append(grad_norm.item())
        kls.append(kl.mean().item())
        rmin.append(clamped.min().item())
        rmax.append(clamped.max().item())
    timings["policy_training"] = time.perf_counter() - t

    diff = gen_lp - old_lp
    return {
        "loss": sum(losses) / len(losses),
        "reward": rewards.mean().item(),
        "grad_norm": sum(grad_norms) / len(grad_norms),
        "kl": sum(kls) / len(kls),
        "token_mult_prob_error": torch.exp(diff.abs()).mean().item(),
        "gen_kl_error": (torch.exp(-diff) + diff - 1).mean().item(),
        "probs_ratio_clamped_min": min(rmin),
        "probs_ratio_clamped_max": max(rmax),
        "mean_gen_tokens_per_sample": float(task.PROMPT_LEN),
        "lr": opt.param_groups[0]["lr"],
    }


def print_results(metrics: dict[str, float], timings: dict[str, float], total: float) -> None:
    say("\n📊 Training Results:")
    say(f"  • Loss: {metrics['loss']:.4f}")
    say(f"  • Generation KL Error: {metrics['gen_kl_error']:.4f}")
    say(f"  • Avg Reward: {metrics['reward']:.4f}")
    say(f"  • Mean Generation Length: {metrics['mean_gen_tokens_per_sample']:.4f}")
    say("\n⏱️  Timing:")
    say(f"  • Total step time: {total:.2f}s")
    for key, value in sorted(timings.items(), key=lambda kv: -kv[1]):
        pct = 100.0 * value / total if total > 0 else 0.0
        say(f"  • {key}: {value:.2f}s ({pct:.1f}%)")


def train(cfg: Config, tb_dir: Path, device: torch.device) -> int:
    from torch.utils.tensorboard import SummaryWriter

    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    t0 = time.perf_counter()
    say("\n▶ Setting up model and training...")
    policy = TinyPolicy(task.VOCAB, task.PROMPT_LEN * 2 + 2).to(device)
    reference = copy.deepcopy(policy).eval()
    for p in reference.parameters():
        p.requires_grad_(False)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    n_params = sum(p.numel() for p in policy.parameters())
    say(f"  ✓ Policy initialized: {n_params} parameters, reference policy frozen")
    tb_dir.mkdir(parents=True, exist_ok=True)
    writer = SummaryWriter(log_dir=str(tb_dir), flush_secs=1)
    say(f"Initialized TensorboardLogger at {tb_dir}")
    say("\n" + "=" * 60)
    say(" " * 18 + "SETUP COMPLETE")
    say(f"  Total setup time: {time.perf_counter() - t0:.1f}s")
    say("=" * 60 + "\n")
    say("🚀 Running synchronous GRPO training (demo)")

    for step in range(1, cfg.steps + 1):
        say(f"\n{BANNER} Step {step}/{cfg.steps} {BANNER}")
        start = time.perf_counter()
        timings: dict[str, float] = {}
        metrics = grpo_step(policy, reference, opt, cfg, gen, device, timings)
        total = time.perf_counter() - start
        for name, value in metrics.items():
            writer.add_scalar(f"train/{name}", value, step)
        writer.add_scalar("timing/train/total_step_time", total, step)
        for name, value in timings.items():
            writer.add_scalar(f"timing/train/{name}", value, step)
        writer.flush()
        print_results(metrics, timings, total)
    writer.close()
    say("Max number of steps has been reached, stopping training early")
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="console.demo.grpo", description=__doc__.splitlines()[0])
    p.add_argument("--tb-dir", required=True, type=Path, help="TensorBoard event directory")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--variant", choices=("nan",), default=None)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error("--steps must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = pick_device(args.device)
    torch.set_num_threads(1)  # a tiny model: one thread is as fast and never fights for cores
    cfg = Config(steps=args.steps, seed=args.seed)
    if args.variant:
        cfg.lr = VARIANT_LR[args.variant]
        cfg.max_grad_norm = math.inf
    say(describe(device))
    say(f"Loaded configuration from: demo GRPO (reverse-the-digits task, variant={args.variant or 'default'})")
    say(f"Overrides: ['grpo.max_num_steps={cfg.steps}', 'policy.optimizer.lr={cfg.lr:g}', 'seed={cfg.seed}']")
    return train(cfg, args.tb_dir, device)


if __name__ == "__main__":
    sys.exit(main())
