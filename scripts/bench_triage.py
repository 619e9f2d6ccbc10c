#!/usr/bin/env python3
"""Benchmark: post-mortem triage of a large realistic log vs `grep -c -E -f <rule literals>`.

Generates a realistic NeMo-RL / verl log (Ray actor prefixes, ANSI colours, tqdm `\\r` redraws,
step banners, metrics lines, vLLM INFO lines, shutdown warnings, one CUDA OOM traceback near the
end) in a temporary folder, measures `console.triage.scan.triage_files` and
`LC_ALL=C grep -c -E -f LITERALS` on the same file in the same run, prints a table, deletes the file.

Usage: python scripts/bench_triage.py [--size-mb 1024] [--repeat 2] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from console.triage.rules import default_catalog  # noqa: E402
from console.triage.scan import make_finder, prefilter_literals, triage_files  # noqa: E402

# Lines a run prints all the time (worker chatter, phases, timings, vLLM stats, progress redraws).
COMMON = [
    "(MegatronPolicyWorker pid={pid}, ip=10.0.0.{ip}) [GPU_DIAG] [MegatronPolicyWorker] [train_step] | NVML: "
    "total=81559MiB used={mem}MiB free={free}MiB",
    "\x1b[36m(MegatronPolicyWorker pid={pid}, ip=10.0.0.{ip})\x1b[0m INFO:megatron.core.timers:(min, max) time "
    "across ranks (ms): forward-backward ...: ({a}.12, {b}.57)",
    "▶ Generating responses for batch of size {n}...",
    "▶ Computing logprobs...",
    "▶ Training policy...",
    "  • Loss: 0.{a:04d}",
    "  • Avg Reward: 0.{b:04d}",
    "  • Total step time: {a}.{b:02d}s",
    "  • policy_training: {a}.{b:02d}s ({n}.0%)",
    "    - E2E (Tokens/sec/gpu): {a}{b}.42",
    "(VllmGenerationWorker pid={pid}) INFO {mm}-{dd} 10:{mm}:{dd} [llm_engine.py:{n}] Avg prompt throughput: "
    "{a}.1 tokens/s, Avg generation throughput: {b}.9 tokens/s, Running: {n} reqs, GPU KV cache usage: 3.1%.",
    "Logged data to tests/functional/grpo_megatron/logs/exp_001/train_data_step{n}.jsonl",
    "(WorkerDict pid={pid}, ip=10.49.193.{ip}) INFO {mm}-{dd} 10:{mm}:{dd} model_runner.py:{n}] Loading model "
    "weights took 0.93 GiB",
    "Processed prompts: {n}%|██████    | {a}/{b} [00:05<00:03, 45.2it/s, est. speed input: {a}00 toks/s]\r"
    "Processed prompts: 100%|██████████| {b}/{b} [00:08<00:00, 30.1it/s, est. speed input: {a}00 toks/s]",
    "INFO:2026-08-22 10:{mm}:{dd},123:worker group kwargs: {{'device_name': 'cuda', 'seed': {a}}}",
]
# Lines printed about once per step or per phase (they contain rule/marker literals).
PER_STEP = [
    "(TaskRunnerV1 pid={pid}) step:{n} - actor/entropy:np.float64(0.{a}) - actor/kl_loss:np.float64(0.00{b}) - "
    "actor/pg_loss:np.float64(0.0{a}) - actor/grad_norm:np.float64(0.{b}) - perf/mfu/actor:0.04{a} - "
    "critic/score/mean:0.{b} - timing_s/gen:{a}.{b} - training/epoch:0",
    "========================= Step {n}/{b} =========================",
    "Training Progress:  {n}%|███▎      | {n}/{b} [02:39<05:18, 159.11s/it]",
    "(WorkerDict pid={pid}) [rank{ip}]:[W1121 10:{mm}:{dd}.123 ProcessGroupNCCL.cpp:{n}] Warning: using "
    "default stream for NCCL collectives [repeated 7x across cluster]",
    "(MegatronPolicyWorker pid={pid}) Checkpoint already exists at /scratch/ckpt. Skipping import.",
    "/usr/lib/python3.12/multiprocessing/resource_tracker.py:254: UserWarning: resource_tracker: There appear "
    "to be 1 leaked semaphore objects to clean up at shutdown",
]
PER_STEP_RATE = 0.01  # about one such line per hundred lines: a noisy run
FAILURE = """Traceback (most recent call last):
  File "/opt/nemo-rl/nemo_rl/algorithms/grpo.py", line 1201, in grpo_train
    train_results = policy.train(train_data, loss_fn)
(MegatronPolicyWorker pid=35477) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
"""


def _fill(template: str, rnd: random.Random) -> str:
    return template.format(pid=rnd.randint(1000, 99999), ip=rnd.randint(1, 250), mem=rnd.randint(1000, 80000),
                           free=rnd.randint(100, 8000), a=rnd.randint(1, 999), b=rnd.randint(1, 99),
                           n=rnd.randint(1, 99), mm=f"{rnd.randint(0, 59):02d}", dd=f"{rnd.randint(0, 59):02d}")


def make_block(rnd: random.Random, size: int, rate: float = PER_STEP_RATE) -> bytes:
    lines: list[str] = []
    total = 0
    while total < size:
        pool = PER_STEP if rnd.random() < rate else COMMON
        line = _fill(rnd.choice(pool), rnd)
        lines.append(line)
        total += len(line) + 1
    return ("\n".join(lines) + "\n").encode()


def generate(path: Path, size_mb: int, seed: int = 1, rate: float = PER_STEP_RATE) -> int:
    rnd = random.Random(seed)
    blocks = [make_block(rnd, 1 << 20, rate) for _ in range(48)]
    target = size_mb << 20
    written = 0
    with open(path, "wb", buffering=1 << 22) as fh:
        while written < target:
            b = blocks[rnd.randrange(len(blocks))]
            fh.write(b)
            written += len(b)
        fh.write(FAILURE.encode())
        written += len(FAILURE)
    return written


def ere_escape(lit: str) -> str:
    return re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", lit)


def best_of(n: int, fn) -> tuple[float, object]:  # noqa: ANN001
    best, out = float("inf"), None
    for _ in range(n):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the generated log (prints its path)")
    ap.add_argument("--per-step-rate", type=float, default=PER_STEP_RATE,
                    help="share of lines holding a rule/marker literal (default %(default)s)")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench_triage_"))
    try:
        log = tmp / "big.log"
        t = time.perf_counter()
        size = generate(log, args.size_mb, rate=args.per_step_rate)
        gen_s = time.perf_counter() - t
        lits = prefilter_literals(default_catalog())
        lit_file = tmp / "literals.txt"
        lit_file.write_text("\n".join(ere_escape(x) for x in lits) + "\n")
        mb = size / 1e6

        env = dict(os.environ, LC_ALL="C")
        grep = shutil.which("grep") or "grep"
        grep_s, proc = best_of(args.repeat, lambda: subprocess.run(
            [grep, "-c", "-E", "-f", str(lit_file), str(log)], capture_output=True, text=True, env=env))
        grep_hits = int(proc.stdout.strip() or 0)  # type: ignore[union-attr]

        tri_s, res = best_of(args.repeat, lambda: triage_files([log]))
        _, kind = make_finder(lits)
        primary = (res or {}).get("primary") or {}  # type: ignore[union-attr]

        rows = [
            ("log size", f"{mb:,.0f} MB", f"generated in {gen_s:.1f} s, literal-line rate {args.per_step_rate}"),
            ("rule literals", str(len(lits)), f"prefilter: {kind}"),
            ("grep -c -E -f", f"{grep_s:.2f} s", f"{mb / grep_s:,.0f} MB/s, {grep_hits:,} matching lines"),
            ("rl-console triage", f"{tri_s:.2f} s", f"{mb / tri_s:,.0f} MB/s"),
            ("ratio triage/grep", f"{grep_s / tri_s:.2f}", "target >= 0.33"),
            ("verdict", str(res["verdict"]), f"primary {primary.get('class')} at line {primary.get('line')}"),  # type: ignore[index]
        ]
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        print(f"{'measure':<{w0}}  {'value':>{w1}}  note")
        print(f"{'-' * w0}  {'-' * w1}  {'-' * 40}")
        for a, b, c in rows:
            print(f"{a:<{w0}}  {b:>{w1}}  {c}")
        if args.keep:
            print(f"kept: {log}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
