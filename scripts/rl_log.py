"""Generate RL-shaped logs for the triage benchmark and the fast-path differential test.

A log shaped like a real NeMo-RL / verl run under Ray: ANSI-coloured Ray actor prefixes, vLLM and
Megatron logger lines (``[file.py:N]``), Ray's ``[repeated Nx across cluster]`` dedup lines, tqdm
bars redrawn with ``\\r``, NeMo-RL step banners and result blocks, verl ``step:N - ...`` metric lines
and ``Training Progress`` bars, Python warnings, and one failure (a CUDA OOM traceback by default)
placed where the caller asks. About 44% of the lines hold one of the triage engine's literals (Ray's
dedup suffix, progress and structure markers, metrics, rule literals such as the ``DTensorPolicyWorker``
actor name), like a real run's log.

Step bodies are generated once and reused so that a 1 GB file takes seconds, not minutes.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

RAY = (
    "\x1b[36m({actor} pid={pid}, ip=10.0.{ip}.{ip2})\x1b[0m ",
    "({actor} pid={pid}) ",
    "\x1b[33m({actor} pid={pid}, ip=10.0.{ip}.{ip2})\x1b[0m ",
)
# mostly Megatron-backed workers; a few DTensor ones (whose name is also a rule literal)
ACTORS = ("VllmGenerationWorker", "MegatronPolicyWorker", "WorkerDict", "TaskRunner") * 3 + (
    "DTensorPolicyWorkerV2",
)

DEDUP = (
    0.42  # share of worker lines that Ray printed once for several workers ("[repeated 8x across cluster]")
)
# (weight, template, ray-prefixed?) for the worker chatter of one training step.
CHATTER: list[tuple[int, str, bool]] = [
    # vLLM / Megatron / Ray logger lines: "file.py:N" (the `.py:` structure literal)
    (
        170,
        "INFO {mm}-{dd} 10:{mm}:{dd} [llm_engine.py:{n3}] Avg prompt throughput: {a}.{b} tokens/s, Avg generation "
        "throughput: {a}{b}.3 tokens/s, Running: {n} reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: "
        "{n}.{b}%, CPU KV cache usage: 0.0%.",
        True,
    ),
    (
        5,
        "INFO {mm}-{dd} 10:{mm}:{dd} [model_runner.py:{n3}] Graph capturing finished in {n} secs, took 0.{b} GiB",
        True,
    ),
    (
        50,
        "INFO {mm}-{dd} 10:{mm}:{dd} [block_manager.py:{n3}] Allocated {a}{b} KV blocks for {n} sequences",
        True,
    ),
    (
        40,
        "[2026-11-21 10:{mm}:{dd},{a:03d}] [INFO] [megatron/core/distributed/param_and_grad_buffer.py:{n3}] "
        "Number of buckets for gradient all-reduce / reduce-scatter: {n}",
        True,
    ),
    (
        30,
        "/opt/nemo_rl_venv/lib/python3.12/site-packages/torch/distributed/fsdp/_state_dict_utils.py:{n3}: "
        "UserWarning: When using ``NO_SHARD`` for ``ShardingStrategy``, full_state_dict will be returned.",
        True,
    ),
    (
        40,
        "INFO {mm}-{dd} 10:{mm}:{dd} [llm_engine.py:{n3}] Avg prompt throughput: 0.0 tokens/s, Running: {n} reqs "
        "[repeated {n}x across cluster]",
        True,
    ),
    (
        10,
        "[W1121 10:{mm}:{dd}.{a:03d}] ProcessGroupNCCL.cpp:{n3}] Warning: using default stream for NCCL "
        "collectives [repeated {n}x across cluster]",
        True,
    ),
    # lines with no literal at all
    (
        90,
        "INFO:megatron.core.timers:(min, max) time across ranks (ms): forward-backward ...: ({a}.12, {b}.57)",
        True,
    ),
    (70, "[GPU_DIAG] [train_step] | NVML: total=81559MiB used={mem}MiB free={free}MiB util={n}%", True),
    (
        60,
        "Processed prompts:  {n}%|██▌       | {a}/{b}99 [00:0{n1}<00:0{n1}, {b}.2it/s, est. speed input: "
        "{a}00.12 toks/s, output: {a}{b}.5 toks/s]\rProcessed prompts: 100%|██████████| {b}99/{b}99 "
        "[00:0{n1}<00:00, {b}.9it/s, est. speed input: {a}11.50 toks/s, output: {a}{b}.1 toks/s]",
        True,
    ),
    (60, "  {a:>5} | {b:>3} | {mem} | logprob {n}.{b:02d} | seq {a}{n} | len {b}{n}", False),
    (
        60,
        "Sampling params: temperature=1.0, top_p=1.0, top_k=-1, max_tokens={a}{b}, stop_token_ids=[{n}]",
        True,
    ),
    (40, "\x1b[32m[Rank {n1}] Loaded batch shard {a}/{b}99 with {a}{b} sequences\x1b[0m", True),
    (40, "  - E2E (Samples/sec/gpu): {a}.{b:02d}, tokens/sec/gpu: {a}{b}.42, MFU {n}.{b}%", False),
    (30, "Adding requests: 100%|██████████| {a}/{a} [00:00<00:00, {a}{b}.47it/s]", True),
    (
        30,
        "Sharding metadata for layer decoder.layers.{n}.self_attention.linear_qkv.weight: shape=({a}, {b}) "
        "dtype=bfloat16",
        True,
    ),
    (20, "Saving rollouts to /scratch/run/rollouts/step_{a}.jsonl ({b} rows)", False),
]
RESULTS = [
    "▶ Preparing batch...",
    "▶ Generating responses for batch of size {a}...",
    "▶ Computing logprobs...",
    "▶ Training policy...",
    "📊 Training Results:",
    "  • Loss: 0.{a:04d}",
    "  • Avg Reward: 0.{b:04d}",
    "  • Mean Generation Length: {a}.{b}",
    "⏱️  Timing:",
    "  • Total step time: {a}.{b:02d}s",
    "  • generation: {a}.{b}s ({n}.0%)",
]
VERL_STEP = (
    "(TaskRunner pid={pid}) step:{step} - global_seqlen/min:{a}{b} - actor/entropy:np.float64(0.{a}) - "
    "actor/kl_loss:np.float64(0.00{b}) - actor/pg_loss:np.float64(0.0{a}) - actor/grad_norm:np.float64(0.{b}) "
    "- perf/mfu/actor:0.04{a} - critic/score/mean:0.{b} - critic/rewards/mean:0.{b} - "
    "response_length/mean:{a}.{b} - timing_s/gen:{a}.{b} - timing_s/update_actor:{b}.{a} - training/epoch:0"
)
BANNER = "========================= Step {step}/{total} ========================="
BAR = (
    "\x1b[A\rTraining Progress:  {pct}%|{bar}| {prev}/{total} [{a}:{dd}<{b}:{mm}, {b}.{n}s/it]"
    "\rTraining Progress:  {pct}%|{bar}| {step}/{total} [{a}:{dd}<{b}:{mm}, {b}.{n}s/it]"
)

FAILURES = {
    "oom": (
        "Traceback (most recent call last):\n"
        '  File "/opt/nemo-rl/nemo_rl/algorithms/grpo.py", line 1201, in grpo_train\n'
        "    train_results = policy.train(train_data, loss_fn)\n"
        "(MegatronPolicyWorker pid=35477) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        "2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which 1.20 GiB is free.\n"
    ),
    "nccl": (
        "(WorkerDict pid=2231, ip=10.0.3.4) [rank3]:[E1121 10:31:02.123 ProcessGroupNCCL.cpp:616] "
        "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=99, OpType=ALLREDUCE) ran for "
        "1800000 milliseconds before timing out.\n"
    ),
    "import": (
        "Traceback (most recent call last):\n"
        '  File "/opt/nemo-rl/examples/run_grpo_math.py", line 12, in <module>\n'
        "    from megatron.bridge import AutoBridge\n"
        "ModuleNotFoundError: No module named 'megatron.bridge'\n"
    ),
    "nan": "(TaskRunner pid=12) step:7 - actor/pg_loss:np.float64(nan) - actor/grad_norm:np.float64(nan)\n",
    "none": "",
}


def _fill(template: str, rnd: random.Random, **extra: object) -> str:
    n1 = rnd.randint(1, 9)
    return template.format(
        pid=rnd.randint(1000, 99999),
        ip=rnd.randint(0, 9),
        ip2=rnd.randint(1, 250),
        mem=rnd.randint(1000, 80000),
        free=rnd.randint(100, 8000),
        a=rnd.randint(1, 999),
        b=rnd.randint(1, 99),
        n=rnd.randint(1, 99),
        n1=n1,
        n3=rnd.randint(100, 999),
        mm=f"{rnd.randint(0, 59):02d}",
        dd=f"{rnd.randint(0, 59):02d}",
        **extra,
    )


def step_body(rnd: random.Random, lines: int) -> bytes:
    """The worker chatter of one step (no step numbers in it, so bodies can be reused)."""
    weights = [w for w, _, _ in CHATTER]
    out: list[str] = []
    for _, template, prefixed in rnd.choices(CHATTER, weights, k=lines):
        text = _fill(template, rnd)
        if prefixed:
            text = _fill(rnd.choice(RAY), rnd, actor=rnd.choice(ACTORS)) + text
            if rnd.random() < DEDUP and "[repeated" not in text:  # Ray's log deduplication
                text += f" [repeated {rnd.randint(2, 64)}x across cluster]"
        out.append(text)
    return ("\n".join(out) + "\n").encode()


def step_lines(rnd: random.Random, step: int, total: int) -> tuple[bytes, bytes]:
    pct = 100 * step // total
    bar = ("█" * (pct // 10)).ljust(10)
    head = [BANNER.format(step=step, total=total), *(_fill(t, rnd) for t in RESULTS[:4])]
    tail = [
        *(_fill(t, rnd) for t in RESULTS[4:]),
        _fill(VERL_STEP, rnd, step=step),
        _fill(BAR, rnd, pct=pct, bar=bar, prev=step - 1, step=step, total=total),
    ]
    return ("\n".join(head) + "\n").encode(), ("\n".join(tail) + "\n").encode()


def rl_chunks(
    size: int,
    seed: int = 1,
    failure: str = "oom",
    fail_at: float = 0.995,
    body_lines: tuple[int, int] = (150, 450),
) -> Iterator[bytes]:
    """Yield the bytes of an RL-shaped log of about ``size`` bytes; the failure text goes in at ``fail_at``
    (a fraction of the size: 0.0 at the start, 1.0 at the very end)."""
    rnd = random.Random(seed)
    bodies = [step_body(rnd, rnd.randint(*body_lines)) for _ in range(64)]
    avg = sum(map(len, bodies)) / len(bodies) + 2000
    total = max(2, int(size / avg * 1.25) + 50)  # the run never reaches its last step: it died
    fail = FAILURES[failure].encode()
    written, step, failed = 0, 0, not fail
    while written < size:
        step += 1
        head, tail = step_lines(rnd, step, total)
        body = bodies[rnd.randrange(len(bodies))]
        if not failed and written + len(head) + len(body) >= fail_at * size:
            cut = body.find(b"\n", len(body) // 2) + 1
            parts = [head, body[:cut], fail, body[cut:], tail]
            failed = True
        else:
            parts = [head, body, tail]
        for p in parts:
            yield p
            written += len(p)
    if not failed:
        yield fail


def write_rl_log(path: Path, size: int, seed: int = 1, failure: str = "oom", fail_at: float = 0.995) -> int:
    written = 0
    with open(path, "wb", buffering=1 << 22) as fh:
        for part in rl_chunks(size, seed, failure, fail_at):
            fh.write(part)
            written += len(part)
    return written
