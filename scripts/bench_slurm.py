"""Benchmark the Slurm launcher on a throw-away local Slurm (needs root and the Debian packages).

Prints a table: cluster bring-up, render, sbatch, poll (squeue [+ scontrol]), submit -> verdict of a
one-step plan through the follower, and the follower's CPU time per poll.

    .venv/bin/python scripts/bench_slurm.py [--jobs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from slurm_cluster import SlurmCluster, skip_reason  # noqa: E402

from console.runs.slurm import backend  # noqa: E402
from console.runs.slurm.script import render  # noqa: E402
from console.runs.state import initial_state, update_state, write_json_atomic, write_state  # noqa: E402
from console.spec import RunSpec  # noqa: E402


def make_run(root: Path, i: int, steps: int) -> tuple[Path, RunSpec, dict]:
    spec = RunSpec(framework="demo", launcher="slurm", runs_dir=str(root), extra={"slurm_gpu_sampling": False})
    run_dir = root / f"run-{i}"
    (run_dir / "logs").mkdir(parents=True)
    plan = {"steps": [{"name": f"s{j}", "argv": ["true"], "cwd": str(run_dir), "env": {}, "gpus": 0}
                      for j in range(steps)]}
    write_json_atomic(run_dir / "spec.json", spec.to_dict())
    write_json_atomic(run_dir / "plan.json", plan)
    write_state(run_dir, initial_state(run_dir.name, plan["steps"], "slurm"))
    return run_dir, spec, plan


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:8.1f} ms (min {min(values) * 1000:.1f}, max {max(values) * 1000:.1f})"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=5)
    args = ap.parse_args()
    reason = skip_reason()
    if reason:
        print(f"skipped: {reason}")
        return 0
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="rlc-bench-", dir="/tmp") as base:
        os.chmod(base, 0o755)
        t0 = time.perf_counter()
        cluster = SlurmCluster(Path(base) / "c")
        try:
            cluster.start()
            rows.append(("cluster up (munged, slurmctld, slurmd, first cycle)", f"{time.perf_counter() - t0:8.2f} s"))
            os.environ["SLURM_CONF"] = str(cluster.conf)
            root = Path(base) / "runs"
            renders, submits, polls, verdicts, cpu_per_poll = [], [], [], [], []
            for i in range(args.jobs):
                run_dir, spec, plan = make_run(root, i, steps=20)
                t = time.perf_counter()
                render(run_dir, plan, spec)
                renders.append(time.perf_counter() - t)
                t = time.perf_counter()
                job_id = backend.submit(run_dir, plan, spec)
                submits.append(time.perf_counter() - t)
                update_state(run_dir, lambda s, j=job_id: s.update(slurm_job_id=j))
                t = time.perf_counter()
                backend.poll(job_id)
                polls.append(time.perf_counter() - t)
                follower = backend.Follower(run_dir, poll_s=0.1)
                r0 = resource.getrusage(resource.RUSAGE_SELF)
                n = 0
                final = None
                while final is None:
                    final = follower.step()
                    n += 1
                    if final is None:
                        time.sleep(0.1)
                r1 = resource.getrusage(resource.RUSAGE_SELF)
                verdicts.append(time.perf_counter() - t)
                cpu_per_poll.append((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / n)
                assert final["verdict"] == "Pass", final
            rows += [("render 20-step script", ms(renders)), ("sbatch (submit)", ms(submits)),
                     ("poll (squeue [+scontrol])", ms(polls)),
                     ("submit -> Pass verdict (20 steps of `srun true`, 0.1 s polls)", ms(verdicts)),
                     ("follower CPU per poll (in-process part)", ms(cpu_per_poll))]
        finally:
            t = time.perf_counter()
            cluster.stop()
            rows.append(("cluster down", f"{time.perf_counter() - t:8.2f} s"))
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  value   (jobs={args.jobs})")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
