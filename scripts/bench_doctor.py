"""Benchmark the preflight doctor: wall time of each check and of a full (concurrent) run.

Builds throw-away git checkouts with a `megatron/bridge` package and a tiny HF snapshot under a temp
dir, then times `run_doctor` for the demo and for verl. Usage: python scripts/bench_doctor.py [--no-ray]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from console.doctor import CHECK_IDS, run_doctor
from console.spec import RunSpec


def _git_repo(path: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", "-C", str(path), *args], check=True, env=env, capture_output=True)


def _timed(spec: RunSpec, checks: list[str] | None) -> tuple[float, str]:
    start = time.perf_counter()
    result = run_doctor(spec, checks=checks)
    return time.perf_counter() - start, result["verdict"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-ray", action="store_true", help="skip bridge_import_ray_worker")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from doctor_helpers import install_fake_uv, make_hf_snapshot, make_project_env

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _git_repo(root / "bridge", {"src/megatron/bridge/__init__.py": "X = 1\n"})
        _git_repo(root / "verl", {"setup.py": "# verl\n"})
        snap = make_hf_snapshot(root / "hub", "Qwen/Qwen2.5-0.5B")
        os.environ["HF_HUB_CACHE"] = str(root / "hub")
        verl = RunSpec(
            framework="verl",
            bridge_repo=str(root / "bridge"),
            repo=str(root / "verl"),
            env={"MODEL_PATH": str(snap)},
            runs_dir=str(root / "runs"),
        )
        demo = RunSpec(framework="demo", runs_dir=str(root / "runs"))
        ids = [c for c in CHECK_IDS if not (args.no_ray and c == "bridge_import_ray_worker")]
        rows: list[tuple[str, str, float, str]] = []
        for cid in ids:
            seconds, verdict = _timed(verl, [cid])
            rows.append(("verl", cid, seconds, verdict))
        rows.append(("verl", "ALL (concurrent)", *_timed(verl, ids)))
        rows.append(("demo", "ALL (concurrent)", *_timed(demo, None)))
        # NeMo-RL: the run's `uv run python` (a stand-in uv running <checkout>/.venv/bin/python)
        _git_repo(root / "nemo-rl", {"pyproject.toml": "[project]\nname = 'nemo-rl'\n"})
        make_project_env(root / "nemo-rl")
        install_fake_uv(root / "bin")
        os.environ["PATH"] = f"{root / 'bin'}:{os.environ['PATH']}"
        nemo = RunSpec(
            framework="nemo-rl",
            bridge_repo=str(root / "bridge"),
            repo=str(root / "nemo-rl"),
            runs_dir=str(root / "runs"),
        )
        from console.plan import build_plan

        for cid in ("run_interpreter", "bridge_import_driver"):
            start = time.perf_counter()
            verdict = run_doctor(nemo, build_plan(nemo), checks=[cid])["verdict"]
            rows.append(("nemo", cid, time.perf_counter() - start, verdict))
        start = time.perf_counter()
        verdict = run_doctor(
            nemo, build_plan(nemo), checks=["run_interpreter", "bridge_import_driver", "mcore_helpers"]
        )["verdict"]
        rows.append(("nemo", "3 checks, one probe", time.perf_counter() - start, verdict))
    print(f"{'spec':<6} {'check':<26} {'seconds':>8}  verdict")
    for spec_name, cid, seconds, verdict in rows:
        print(f"{spec_name:<6} {cid:<26} {seconds:>8.2f}  {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
