"""Benchmark: catalog load and plan building (what the TUI does as the user types).

Prints a table: operation, calls, mean and p95 time per call in milliseconds.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from console.catalog import load_framework, load_guidance
from console.plan import build_plan, render_sh, validate_overrides
from console.spec import RunSpec


def _git(path: Path) -> str:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return str(path)


def _time(fn, n: int) -> tuple[float, float]:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.mean(samples), samples[int(0.95 * (len(samples) - 1))]


def main() -> int:
    tmp = Path(tempfile.mkdtemp())
    bridge, nemo = _git(tmp / "bridge"), _git(tmp / "nemo")
    cfg = tmp / "nemo" / "examples" / "configs"
    cfg.mkdir(parents=True)
    (cfg / "grpo_math_1B.yaml").write_text("grpo:\n  max_num_steps: 10\npolicy:\n  model_name: x\n")
    (cfg / "grpo_math_1B_megatron.yaml").write_text(
        'defaults: "grpo_math_1B.yaml"\npolicy:\n  megatron_cfg: {}\n'
    )
    all_levels = RunSpec(
        framework="nemo-rl",
        levels=[0, 1, 2, 3, 4, 6],
        variants=["delta-compression"],
        repo=nemo,
        bridge_repo=bridge,
        overrides=["grpo.max_num_steps=3"],
    )
    big = build_plan(all_levels)
    rows = [
        (
            "load catalogs (cold)",
            20,
            lambda: (
                load_framework.cache_clear(),
                load_guidance.cache_clear(),
                [load_framework(f) for f in ("nemo-rl", "verl", "demo")],
            ),
        ),
        ("build_plan demo L0", 200, lambda: build_plan(RunSpec(framework="demo"))),
        ("build_plan nemo-rl L0-4,6 + override", 50, lambda: build_plan(all_levels)),
        ("render_sh nemo-rl L0-4,6", 200, lambda: render_sh(big)),
        (
            "validate_overrides x20 (config cached)",
            200,
            lambda: validate_overrides(
                ["grpo.max_num_steps=3"] * 20, nemo, "examples/configs/grpo_math_1B_megatron.yaml"
            ),
        ),
    ]
    print(f"{'operation':42} {'calls':>6} {'mean ms':>9} {'p95 ms':>9}")
    for name, n, fn in rows:
        mean, p95 = _time(fn, n)
        print(f"{name:42} {n:>6} {mean:>9.2f} {p95:>9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
