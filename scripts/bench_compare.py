"""Benchmark: `rl-console compare` on run folders of growing size (what `compare`, the Compare screen
and `run --baseline` pay). Each run has S training steps of T metric tags in metrics.json and a GPU
sample (8 devices) every second of a run of S x 10 s in events.jsonl.

Prints a table: steps, tags, events.jsonl size, mean and max time of one comparison, and the peak RSS
of a fresh process doing three comparisons.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from console.events import Event

GIB = 1024**3


def make_run(root: Path, name: str, steps: int, tags: int, seed: int) -> Path:
    rnd = random.Random(seed)
    d = root / name
    (d / "logs").mkdir(parents=True)
    spec = {
        "framework": "nemo-rl",
        "levels": [0],
        "variants": [],
        "model": None,
        "overrides": [],
        "env": {},
        "extra": {},
    }
    (d / "spec.json").write_text(json.dumps(spec))
    (d / "plan.json").write_text(json.dumps({"spec": spec, "steps": []}))
    (d / "state.json").write_text(
        json.dumps({"id": name, "status": "passed", "verdict": "Pass", "steps": []})
    )
    names = [
        "train/loss",
        "train/reward",
        "train/token_mult_prob_error",
        "train/grad_norm",
        "train/lr",
        "timing/train/total_step_time",
        "timing/train/generation",
    ]
    names += [f"train/extra_{i}" for i in range(tags - len(names))]
    metrics = {n: {str(s): rnd.random() for s in range(1, steps + 1)} for n in names}
    (d / "metrics.json").write_text(json.dumps(metrics))
    with open(d / "events.jsonl", "w") as fh:
        for t in range(steps * 10):
            devs = [
                {
                    "index": i,
                    "name": "NVIDIA H100",
                    "mem_used": int(rnd.random() * 70 * GIB),
                    "mem_total": 80 * GIB,
                    "util": 90,
                    "procs": [],
                }
                for i in range(8)
            ]
            fh.write(Event("gpu", "train", {"devices": devs}, t=float(t)).to_json() + "\n")
            if t % 10 == 0:  # a progress event per step, as the supervisor writes them
                fh.write(Event("progress", "train", {"step": t // 10 + 1, "total": steps}).to_json() + "\n")
    return d


CHILD = """
import resource, sys, time
from console.compare import compare_runs
times = []
for _ in range(3):
    t0 = time.perf_counter()
    compare_runs(sys.argv[1], sys.argv[2])
    times.append((time.perf_counter() - t0) * 1000)
print(sum(times) / len(times), max(times), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def main() -> int:
    root = Path(tempfile.mkdtemp())
    print(f"{'steps':>6} {'tags':>5} {'events MB':>10} {'mean ms':>9} {'max ms':>9} {'peak RSS MB':>12}")
    for steps, tags in ((30, 20), (1000, 100), (10000, 200)):
        a = make_run(root, f"a-{steps}", steps, tags, 1)
        b = make_run(root, f"b-{steps}", steps, tags, 2)
        size = (a / "events.jsonl").stat().st_size / 2**20
        # a fresh process per size: its peak RSS is the comparison's (plus the interpreter's)
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(a), str(b)], capture_output=True, text=True, check=True
        ).stdout.split()
        mean, worst, rss = (float(x) for x in out)
        print(f"{steps:>6} {tags:>5} {size:>10.1f} {mean:>9.1f} {worst:>9.1f} {rss:>12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
