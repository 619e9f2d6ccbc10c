"""The embedded demo workload: GRPO of a tiny transformer policy on a toy task, in PyTorch.

Run: ``python -u -m console.demo.grpo --tb-dir DIR [options] [KEY=VALUE ...]`` (``--help``). It prints
NeMo-RL-shaped step banners, phase lines and results blocks, and writes TensorBoard scalars under
NeMo-RL's tag names so the same monitor, metrics dump and checks apply. ``KEY=VALUE``: NeMo-RL-style
overrides of the demo's few keys (``OVERRIDE_KEYS``); an unknown key fails as Hydra does.

The ``nan`` variant trains the same task with an absurd learning rate: the weights really blow up and
the loss and gradient norm really become NaN/inf (the run goes on and logs them). ``--lr-scale`` and
``--advantage-norm mean`` perturb the policy update (the planted changes ``rl-console compare`` must
see). Each step first copies the trained weights into a generation copy through the demo Bridge
(``console.demo.bridge``, or ``rlc_demo_bridge`` from the Bridge checkout), as NeMo-RL's refit does.
On CPU the run is deterministic: the same seed gives the same numbers, bit for bit.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import math
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from console.demo import task
from console.demo.bridge import load_provider
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
    lr_scale: float = 1.0
    normalize_rewards: bool = True  # divide group-centred rewards by their std (NeMo-RL's default)


# NeMo-RL override keys the demo understands -> (Config field, type)
OVERRIDE_KEYS: dict[str, tuple[str, type]] = {
    "grpo.seed": ("seed", int),
    "grpo.max_num_steps": ("steps", int),
    "grpo.num_prompts_per_step": ("prompts_per_step", int),
    "grpo.num_generations_per_prompt": ("generations_per_prompt", int),
    "grpo.normalize_rewards": ("normalize_rewards", bool),
    "policy.optimizer.kwargs.lr": ("lr", float),
}


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


def refit(policy: TinyPolicy, gen_policy: TinyPolicy, bridge: object) -> None:
    """Copy the trained weights into the generation copy through the Bridge's conversion."""
    with torch.no_grad():
        gen_policy.load_state_dict(bridge.export_weights(policy.state_dict()))  # type: ignore[attr-defined]


@contextlib.contextmanager
def _timed(timings: dict[str, float], key: str, line: str) -> Iterator[None]:
    """Say NeMo-RL's phase ``line``, then time the block into ``timings[key]``."""
    t = time.perf_counter()
    say(line)
    yield
    timings[key] = time.perf_counter() - t


def grpo_step(
    policy: TinyPolicy,
    reference: TinyPolicy,
    opt: torch.optim.Optimizer,
    cfg: Config,
    gen: torch.Generator,
    device: torch.device,
    timings: dict[str, float],
    gen_policy: TinyPolicy | None = None,
    bridge: object = None,
) -> dict[str, float]:
    """One GRPO step: refit, sample groups, score them, group-relative advantages, clipped PG update."""
    n_prompts, group = cfg.prompts_per_step, cfg.generations_per_prompt
    prompt_len = task.PROMPT_LEN + 2

    with _timed(timings, "data_processing", "▶ Preparing batch..."):
        prompts = task.sample_prompts(n_prompts, gen).repeat_interleave(group, dim=0).to(device)

    if gen_policy is None:
        gen_policy = policy
    else:
        with _timed(
            timings, "prepare_for_generation/transfer_and_update_weights", "▶ Preparing for generation..."
        ):
            refit(policy, gen_policy, bridge if bridge is not None else load_provider())

    with _timed(timings, "generation", f"▶ Generating responses for batch of size {prompts.shape[0]}..."):
        policy.eval()
        gen_policy.eval()
        seqs, gen_lp = generate(gen_policy, prompts, task.PROMPT_LEN, gen)

    with _timed(timings, "reward_calculation", "▶ Processing rewards...,"):
        rewards = task.reward(prompts, seqs[:, prompt_len:])

    with _timed(timings, "advantage_calculation", "▶ Computing advantages..."):
        grouped = rewards.view(n_prompts, group)
        centred = grouped - grouped.mean(1, keepdim=True)
        adv = (centred / (grouped.std(1, keepdim=True) + 1e-4) if cfg.normalize_rewards else centred).view(-1)

    with _timed(timings, "policy_and_reference_logprobs", "▶ Computing logprobs..."), torch.no_grad():
        old_lp = answer_logprobs(policy, seqs, prompt_len)
        ref_lp = answer_logprobs(reference, seqs, prompt_len)

    say("▶ Preparing for training...")
    with _timed(timings, "policy_training", "▶ Training policy..."):
        policy.train()
        order = torch.randperm(seqs.shape[0], generator=gen).to(device)
        stats = []  # per minibatch: loss, grad norm, kl, clamped ratio min and max
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
            loss.backward()  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward unannotated
            grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)
            opt.step()
            stats.append(
                (loss.item(), grad_norm.item(), kl.mean().item(), clamped.min().item(), clamped.max().item())
            )
    losses, grad_norms, kls, rmin, rmax = zip(*stats, strict=True)

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
    reference = copy.deepcopy(policy).eval().requires_grad_(False)
    gen_policy = copy.deepcopy(policy).eval().requires_grad_(False)
    bridge = load_provider()
    say(f"demo bridge: {bridge.__name__} ({getattr(bridge, '__file__', '?')})")
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr * cfg.lr_scale)
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
        metrics = grpo_step(policy, reference, opt, cfg, gen, device, timings, gen_policy, bridge)
        total = time.perf_counter() - start
        for name, value in metrics.items():
            writer.add_scalar(f"train/{name}", value, step)
        writer.add_scalar("timing/train/total_step_time", total, step)
        tokens = cfg.prompts_per_step * cfg.generations_per_prompt * (task.PROMPT_LEN * 2 + 2)
        writer.add_scalar(
            "timing/train/valid_tokens_per_sec_per_gpu", tokens / total if total > 0 else 0.0, step
        )
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
    p.add_argument("--variant", choices=("nan",))
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument(
        "--lr-scale", type=float, default=1.0, help="multiply the learning rate (a planted change)"
    )
    p.add_argument(
        "--advantage-norm",
        choices=("std", "mean"),
        help="std: (r - mean) / std (default); mean: r - mean only (a planted change)",
    )
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="NeMo-RL-style overrides")
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error("--steps must be >= 1")
    if not args.lr_scale > 0 or math.isinf(args.lr_scale):
        p.error("--lr-scale must be a positive number")
    return args


def _as_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise ValueError(text)


def apply_overrides(cfg: Config, overrides: list[str]) -> None:
    """Apply ``KEY=VALUE`` overrides (later wins); SystemExit(2) with Hydra's wording on a bad one."""
    for text in overrides:
        key, sep, value = text.lstrip("+").partition("=")
        if not sep or key not in OVERRIDE_KEYS:
            print(
                f"Could not override '{key}'.\nTo append to your config use +{text}\n"
                f"Key '{key}' is not in struct (demo keys: {', '.join(OVERRIDE_KEYS)})",
                file=sys.stderr,
            )
            raise SystemExit(2)
        field_name, kind = OVERRIDE_KEYS[key]
        try:
            parsed = _as_bool(value) if kind is bool else kind(value)
        except ValueError:
            print(f"Could not override '{key}': {value!r} is not a valid {kind.__name__}", file=sys.stderr)
            raise SystemExit(2) from None
        if field_name == "steps" and parsed < 1:
            print(f"Could not override '{key}': must be >= 1", file=sys.stderr)
            raise SystemExit(2)
        setattr(cfg, field_name, parsed)


def make_deterministic(device: torch.device) -> None:
    """Same seed, same numbers: one CPU thread and deterministic kernels (cuBLAS needs its workspace)."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.set_num_threads(1)  # a tiny model: one thread is as fast and never fights for cores
    torch.use_deterministic_algorithms(True, warn_only=device.type != "cpu")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = pick_device(args.device)
    make_deterministic(device)
    cfg = Config(steps=args.steps, seed=args.seed, lr_scale=args.lr_scale)
    if args.advantage_norm:
        cfg.normalize_rewards = args.advantage_norm == "std"
    if args.variant:
        cfg.lr = VARIANT_LR[args.variant]
        cfg.max_grad_norm = math.inf
    apply_overrides(cfg, args.overrides)
    say(describe(device))
    say(
        f"Loaded configuration from: demo GRPO (reverse-the-digits task, variant={args.variant or 'default'})"
    )
    say(
        f"Overrides: ['grpo.max_num_steps={cfg.steps}', 'policy.optimizer.kwargs.lr={cfg.lr * cfg.lr_scale:g}', "
        f"'grpo.seed={cfg.seed}', 'grpo.normalize_rewards={str(cfg.normalize_rewards).lower()}']"
    )
    return train(cfg, args.tb_dir, device)


if __name__ == "__main__":
    sys.exit(main())
