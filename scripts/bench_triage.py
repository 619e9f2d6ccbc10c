#!/usr/bin/env python3
"""Benchmark: `rl-console triage` on big logs vs `grep -E -f` and ripgrep on the rules' literals.

Three mixes of lines, each generated in a temporary folder, measured, then deleted:
- ``quiet``: a NeMo-RL / verl log where about 1% of the lines hold a rule/marker literal;
- ``error-dense``: the same with 16% such lines (warnings, retries, noise tracebacks);
- ``rl``: an RL-shaped log (``scripts/rl_log.py``): Ray-prefixed ANSI worker lines, tqdm ``\\r`` bars,
  NeMo-RL step banners, verl ``step:N - ...`` lines, one CUDA OOM near the end; about 44% of its
  lines hold a literal (logger ``.py:`` prefixes, progress and structure markers).

For each size and mix, ``--repeat`` rounds of each tool on the same file, one after the other in each
round (so that a change of load hits all of them): ``LC_ALL=C grep -c -E -f LITERALS``,
``rg -c -F -f LITERALS`` and ``python -m console triage --json``, each in its own process (wall time, CPU
time and peak RSS from ``os.wait4``). The table gives the median of the rounds; ``wall/grep`` and
``wall/rg`` are the medians of the per-round ratios and ``spread`` their range over the rounds (how noisy
the machine was). The load average is printed: on a shared machine, compare CPU seconds too.

Then the live path: ``scripts/bench_live_triage.py`` (the supervisor's triage at 20k RL-shaped lines/s),
unless ``--live-seconds 0``.

Usage: python scripts/bench_triage.py [--sizes 300,1024] [--mixes quiet,error-dense,rl] [--repeat 3]
       [--live-seconds 10]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from rl_log import write_rl_log  # noqa: E402

from console.triage.rules import default_catalog  # noqa: E402
from console.triage.scan import prefilter_literals  # noqa: E402

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
FAILURE = """Traceback (most recent call last):
  File "/opt/nemo-rl/nemo_rl/algorithms/grpo.py", line 1201, in grpo_train
    train_results = policy.train(train_data, loss_fn)
(MegatronPolicyWorker pid=35477) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
"""
MIXES = {"quiet": 0.01, "error-dense": 0.16, "rl": None}


def _fill(template: str, rnd: random.Random) -> str:
    return template.format(
        pid=rnd.randint(1000, 99999),
        ip=rnd.randint(1, 250),
        mem=rnd.randint(1000, 80000),
        free=rnd.randint(100, 8000),
        a=rnd.randint(1, 999),
        b=rnd.randint(1, 99),
        n=rnd.randint(1, 99),
        mm=f"{rnd.randint(0, 59):02d}",
        dd=f"{rnd.randint(0, 59):02d}",
    )


def make_block(rnd: random.Random, size: int, rate: float) -> bytes:
    lines: list[str] = []
    total = 0
    while total < size:
        pool = PER_STEP if rnd.random() < rate else COMMON
        line = _fill(rnd.choice(pool), rnd)
        lines.append(line)
        total += len(line) + 1
    return ("\n".join(lines) + "\n").encode()


def generate(path: Path, size: int, mix: str, seed: int = 1) -> int:
    rate = MIXES[mix]
    if rate is None:
        return write_rl_log(path, size, seed=seed)
    rnd = random.Random(seed)
    blocks = [make_block(rnd, 1 << 20, rate) for _ in range(48)]
    written = 0
    with open(path, "wb", buffering=1 << 22) as fh:
        while written < size:
            b = blocks[rnd.randrange(len(blocks))]
            fh.write(b)
            written += len(b)
        fh.write(FAILURE.encode())
        written += len(FAILURE)
    return written


def ere_escape(lit: str) -> str:
    return re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", lit)


@dataclass
class Run:
    wall: float
    cpu: float
    rss_mb: float
    out: str


GNU_TIME = Path("/usr/bin/time")


def run_once(cmd: list[str], env: dict[str, str]) -> Run:
    """Wall and CPU time of ``cmd``; its peak RSS from GNU time where there is one (a child's ru_maxrss
    counts the memory of this process at fork time, before the exec)."""
    with tempfile.NamedTemporaryFile(prefix="bench_rss_") as rss:
        if GNU_TIME.exists():
            cmd = [str(GNU_TIME), "-f", "%M", "-o", rss.name, *cmd]
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        out = proc.stdout.read() if proc.stdout else b""  # type: ignore[union-attr]
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        kb = Path(rss.name).read_text().split()[-1:] if GNU_TIME.exists() else []
        rss_mb = int(kb[0]) / 1024 if kb and kb[0].isdigit() else ru.ru_maxrss / 1024
    return Run(wall, ru.ru_utime + ru.ru_stime, rss_mb, out.decode(errors="replace"))


def median_run(runs: list[Run]) -> Run:
    """The median wall, CPU and RSS of the runs (the output of the last)."""
    return Run(
        statistics.median(r.wall for r in runs),
        statistics.median(r.cpu for r in runs),
        statistics.median(r.rss_mb for r in runs),
        runs[-1].out,
    )


def ratios(runs: list[Run], ref: list[Run]) -> tuple[float, float, float]:
    """(median, min, max) of the per-round wall-time ratios."""
    rs = [a.wall / b.wall for a, b in zip(runs, ref, strict=True)]
    return statistics.median(rs), min(rs), max(rs)


def _summary(tool: str, out: str) -> str:
    if tool == "rl-console triage":
        import json

        try:
            res = json.loads(out)
        except ValueError:
            return "no JSON"
        p = res.get("primary") or {}
        return f"{res['verdict']} {p.get('class')} line {p.get('line')} step {res['progress']['step']}"
    return f"{int(out.strip() or 0):,} lines with a literal"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--sizes", default="300,1024", help="log sizes in MB, comma-separated (default %(default)s)"
    )
    ap.add_argument("--mixes", default=",".join(MIXES), help="mixes to run (default %(default)s)")
    ap.add_argument(
        "--repeat", type=int, default=3, help="rounds per file (median kept, default %(default)s)"
    )
    ap.add_argument(
        "--live-seconds",
        type=float,
        default=10.0,
        help="live measurement length, 0: none (default %(default)s)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the generated logs (prints their paths)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    mixes = [m.strip() for m in args.mixes.split(",") if m.strip()]
    bad = [m for m in mixes if m not in MIXES]
    if bad:
        print(f"bench_triage: unknown mix {bad}; choose from {list(MIXES)}", file=sys.stderr)
        return 2

    tmp = Path(tempfile.mkdtemp(prefix="bench_triage_"))
    lits = prefilter_literals(default_catalog())
    ere = tmp / "literals.ere"
    ere.write_text("\n".join(ere_escape(x) for x in lits) + "\n")
    fixed = tmp / "literals.txt"
    fixed.write_text("\n".join(lits) + "\n")
    env = dict(os.environ, LC_ALL="C", PYTHONPATH=str(ROOT))
    grep = shutil.which("grep") or "grep"
    rg = shutil.which("rg")
    rows: list[tuple[str, ...]] = []
    load0 = os.getloadavg()
    print(
        f"{len(lits)} literals; load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} on {os.cpu_count()} CPUs",
        flush=True,
    )
    try:
        for size_mb in sizes:
            free = shutil.disk_usage(tmp).free
            if free < 3 * (size_mb << 20):
                print(f"skipping {size_mb} MB: only {free >> 20} MB free in {tmp}", file=sys.stderr)
                continue
            for mix in mixes:
                log = tmp / f"{mix}-{size_mb}.log"
                t = time.perf_counter()
                size = generate(log, size_mb * 1_000_000, mix)
                gen_s = time.perf_counter() - t
                mb = size / 1e6
                with open(log, "rb") as fh:
                    nlines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 24), b""))
                tools: list[tuple[str, list[str]]] = [
                    ("grep -E -f", [grep, "-c", "-E", "-f", str(ere), str(log)])
                ]
                if rg:
                    tools.append(("rg -F -f", [rg, "-c", "-F", "-f", str(fixed), str(log)]))
                tools.append(
                    ("rl-console triage", [sys.executable, "-m", "console", "triage", "--json", str(log)])
                )
                rounds: dict[str, list[Run]] = {name: [] for name, _ in tools}
                for _ in range(max(1, args.repeat)):
                    for name, cmd in tools:
                        rounds[name].append(run_once(cmd, env))
                g = median_run(rounds["grep -E -f"])
                lit_pct = f"{100 * int(g.out.strip() or 0) / max(1, nlines):.0f}%"
                for name, runs in rounds.items():
                    r = median_run(runs)
                    vs_grep = ratios(runs, rounds["grep -E -f"])
                    vs_rg = ratios(runs, rounds["rg -F -f"]) if "rg -F -f" in rounds else None
                    rows.append(
                        (
                            f"{mb:,.0f}",
                            mix,
                            lit_pct,
                            name,
                            f"{r.wall:.2f}",
                            f"{mb / r.wall:,.0f}",
                            f"{r.cpu:.2f}",
                            f"{vs_grep[0]:.2f}",
                            f"{vs_grep[1]:.2f}-{vs_grep[2]:.2f}",
                            f"{vs_rg[0]:.2f}" if vs_rg else "-",
                            f"{r.cpu / g.cpu:.2f}" if g.cpu else "-",
                            f"{r.rss_mb:,.0f}",
                            _summary(name, r.out),
                        )
                    )
                print(f"  {mix} {mb:,.0f} MB generated in {gen_s:.1f} s, measured", flush=True)
                if args.keep:
                    print(f"  kept: {log}")
                else:
                    log.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    load1 = os.getloadavg()
    head = (
        "MB",
        "mix",
        "literal lines",
        "tool",
        "wall s",
        "MB/s",
        "cpu s",
        "wall/grep",
        "spread",
        "wall/rg",
        "cpu/grep",
        "peak RSS MB",
        "result",
    )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    print()
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    print(
        f"\n{max(1, args.repeat)} rounds, medians; load average at the end {load1[0]:.2f} {load1[1]:.2f} "
        f"{load1[2]:.2f}; targets: triage/grep <= 3.0 for every mix, peak RSS <= 200 MB at 1 GB"
    )
    if args.live_seconds > 0:
        print(flush=True)
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "scripts" / "bench_live_triage.py"),
                "--seconds",
                str(args.live_seconds),
            ],
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            check=False,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
