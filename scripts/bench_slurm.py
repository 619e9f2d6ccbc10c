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

from console.rundir.state import initial_state, update_state, write_json_atomic, write_state  # noqa: E402
from console.runs.slurm import backend  # noqa: E402
from console.runs.slurm.script import render  # noqa: E402
from console.spec import RunSpec  # noqa: E402


def make_run(root: Path, i: int, steps: int) -> tuple[Path, RunSpec, dict]:
    spec = RunSpec(
        framework="demo", launcher="slurm", runs_dir=str(root), extra={"slurm_gpu_sampling": False}
    )
    run_dir = root / f"run-{i}"
    (run_dir / "logs").mkdir(parents=True)
    plan = {
        "steps": [
            {"name": f"s{j}", "argv": ["true"], "cwd": str(run_dir), "env": {}, "gpus": 0}
            for j in range(steps)
        ]
    }
    write_json_atomic(run_dir / "spec.json", spec.to_dict())
    write_json_atomic(run_dir / "plan.json", plan)
    write_state(run_dir, initial_state(run_dir.name, plan["steps"], "slurm"))
    return run_dir, spec, plan


TRAIN = (
    "import time\n"
    "for i in range(1, 6):\n"
    "    print('at', time.time(), flush=True)\n"
    "    print('=' * 20, f'Step {i}/5', '=' * 20, flush=True)\n"
    "    time.sleep(0.7)\n"
)


def first_progress(root: Path, jobs: int) -> tuple[list[float], list[float], list[float]]:
    """Through start_run (the real path: sbatch + detached follower, or the local supervisor): from
    submission to the first ``progress`` event in events.jsonl; and, for Slurm, from the moment the
    banner was printed to its progress event (median over the banners: the follower's log latency)."""
    from console.events import iter_events
    from console.rundir.state import is_finished, read_state
    from console.runs.launch import start_run

    first_slurm: list[float] = []
    first_local: list[float] = []
    last_slurm: list[float] = []
    for launcher in ("slurm", "local"):
        for i in range(jobs):
            spec = RunSpec(
                framework="nemo-rl",
                launcher=launcher,
                runs_dir=str(root / f"fp-{launcher}-{i}"),
                extra={"slurm_gpu_sampling": False},
            )
            plan = {
                "steps": [
                    {
                        "name": "train",
                        "argv": [sys.executable, "-u", "-c", TRAIN],
                        "kind": "train",
                        "cwd": str(root),
                        "env": {},
                        "gpus": 0,
                    }
                ]
            }
            t0 = time.time()
            run_dir = start_run(spec, plan=plan)
            while not is_finished(read_state(run_dir)):
                time.sleep(0.05)
            progress = [e for e in iter_events(run_dir / "events.jsonl") if e.type == "progress"]
            if launcher == "slurm":
                import json

                submitted = json.loads((run_dir / "slurm" / "submission.json").read_text())["submitted"]
                first_slurm.append(progress[0].t - submitted)
                log = (run_dir / "logs" / "01-train.log").read_text().splitlines()
                printed = [float(line.split()[1]) for line in log if line.startswith("at ")]
                last_slurm.append(
                    statistics.median(ev.t - at for ev, at in zip(progress, printed, strict=False))
                )
            else:
                first_local.append(progress[0].t - t0)
    return first_slurm, first_local, last_slurm


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
            rows.append(
                ("cluster up (munged, slurmctld, slurmd, first cycle)", f"{time.perf_counter() - t0:8.2f} s")
            )
            os.environ["SLURM_CONF"] = str(cluster.conf)
            root = Path(base) / "runs"
            renders, submits, polls, verdicts, cpu_per_poll = [], [], [], [], []
            cpu_finish: list[float] = []
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
                follower = backend.JobRecorder(run_dir, poll_s=0.1)
                n = 0
                cpu_polls = 0.0
                final = None
                while final is None:
                    r0 = resource.getrusage(resource.RUSAGE_SELF)
                    final = follower.step()
                    r1 = resource.getrusage(resource.RUSAGE_SELF)
                    cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
                    if final is None:
                        n += 1
                        cpu_polls += cpu
                        time.sleep(0.1)
                    else:
                        cpu_finish.append(cpu)
                verdicts.append(time.perf_counter() - t)
                cpu_per_poll.append(cpu_polls / max(1, n))
                assert final["verdict"] == "Pass", final
            first_slurm, first_local, last_slurm = first_progress(root, args.jobs)
            rows += [
                ("render 20-step script", ms(renders)),
                ("sbatch (submit)", ms(submits)),
                ("poll (squeue [+scontrol])", ms(polls)),
                ("submit -> Pass verdict (20 steps of `srun true`, 0.1 s polls)", ms(verdicts)),
                ("follower CPU per poll while the job runs (in-process part)", ms(cpu_per_poll)),
                ("follower CPU of the last poll (verdict, triage.json, report)", ms(cpu_finish)),
                ("slurm: sbatch -> first progress event (detached follower)", ms(first_slurm)),
                ("local: start -> first progress event (supervisor)", ms(first_local)),
                ("slurm: banner printed -> its progress event", ms(last_slurm)),
            ]
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
