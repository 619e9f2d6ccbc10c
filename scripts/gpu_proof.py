"""Prove the GPU path on a machine with an NVIDIA GPU and print what was seen.

1. Runs the embedded demo (``rl-console demo --headless``) in a fresh runs folder; the demo picks
   CUDA when present. Prints the device line, wall time, reward of the first and last steps, and
   the largest GPU memory the supervisor's sampler attributed to the run (from events.jsonl).
2. Starts a child process that holds a known CUDA allocation, samples NVML with ``GpuSampler``
   keyed to that child's process tree, and prints the table the GPU panel is built from.

Usage: python scripts/gpu_proof.py [--runs-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from console.monitor.gpu import GpuSampler
from console.monitor.procs import run_process_tree

HOLDER = r"""
import sys, time, torch
x = torch.empty(int(sys.argv[1]) * (1 << 20), dtype=torch.uint8, device="cuda")
x.fill_(1); torch.cuda.synchronize()
print("allocated", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _mib(n: int | None) -> str:
    return "?" if n is None else f"{n / (1 << 20):,.0f} MiB"


def demo_run(runs_dir: Path) -> None:
    t0 = time.time()
    proc = subprocess.run(
        [sys.executable, "-m", "console", "demo", "--headless", "--runs-dir", str(runs_dir)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    wall = time.time() - t0
    out = proc.stdout.splitlines()
    device = next((ln for ln in out if "device:" in ln), "device: ?")
    verdict = next((ln for ln in reversed(out) if ln.startswith("Verdict:")), "Verdict: ?")
    run_dir = sorted(p for p in runs_dir.iterdir() if p.is_dir())[-1]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    reward = metrics.get("train/reward", {})
    steps = sorted(reward, key=int)
    peak: dict[int, int] = {}
    names: set[str] = set()
    samples = 0
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        ev = json.loads(line)
        if ev.get("type") != "gpu" or not ev.get("available"):
            continue
        samples += 1
        for dev in ev.get("devices", []):
            ours = [p for p in dev.get("procs", []) if p.get("ours")]
            names |= {p.get("name", "?") for p in ours}
            peak[dev["index"]] = max(peak.get(dev["index"], 0), sum(p.get("mem") or 0 for p in ours))
    print("== demo run ==")
    print(f"{device.strip()}")
    print(f"wall time: {wall:.1f} s (exit {proc.returncode}); {verdict}")
    if steps:
        print(f"reward: step {steps[0]} = {reward[steps[0]]:.3f}, step {steps[-1]} = {reward[steps[-1]]:.3f}")
    print(
        f"gpu samples in events.jsonl: {samples}; peak run memory per device: "
        + ", ".join(f"GPU{i} {_mib(m)}" for i, m in sorted(peak.items()))
        + f"; processes: {sorted(names)}"
    )
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:])


def sampler_attribution(mib: int = 2048) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(mib), "20"], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    child.stdout.readline()
    sampler = GpuSampler(run_pids_fn=lambda: run_process_tree([child.pid]))
    t0 = time.perf_counter()
    snap = sampler.sample()
    cost = (time.perf_counter() - t0) * 1000
    print(f"== NVML sampler (child pid {child.pid} holds {mib} MiB) ==")
    print(f"available={snap.available} driver={snap.driver} reason={snap.reason!r} sample_ms={cost:.1f}")
    for dev in snap.devices:
        print(
            f"GPU{dev.index} {dev.name} used {_mib(dev.mem_used)} / {_mib(dev.mem_total)} util {dev.util}% "
            f"mig={dev.mig} lost={dev.lost} ours={_mib(dev.ours_mem)}"
        )
        for p in dev.procs:
            print(f"   pid {p.pid:>7} {p.name:<20} {_mib(p.mem):>12} {'<- this run' if p.ours else ''}")
    child.kill()
    child.wait()
    sampler.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs-dir", default=None)
    args = ap.parse_args()
    runs = Path(args.runs_dir or tempfile.mkdtemp(prefix="rlc-gpu-"))
    runs.mkdir(parents=True, exist_ok=True)
    demo_run(runs)
    sampler_attribution()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
