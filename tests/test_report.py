"""Run verdicts and the summary report on run folders built by hand from console/CONTRACTS.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from console.report import render_json, render_markdown, write_report
from console.triage.verdict import run_verdict

pytestmark = pytest.mark.timeout(60)

FIXTURES = Path(__file__).parent / "fixtures" / "triage"
BRIDGE = "/work/bridge"
REPO = "/work/nemo-rl"
SECRET = "hf_abcdefghijklmnopqrstuvwxyz0123"


def _step(name: str, argv: list[str], kind: str, deliverable: str, **extra: Any) -> dict[str, Any]:
    d = {
        "name": name,
        "title": extra.pop("title", name),
        "argv": argv,
        "env": extra.pop("env", {}),
        "unset": [],
        "cwd": extra.pop("cwd", REPO),
        "gpus": 0,
        "proves": "",
        "criteria": extra.pop("criteria", []),
        "level": 0,
        "variant": None,
        "deliverable": deliverable,
        "kind": kind,
        "log_files": [],
        "tb_dir": None,
        "metrics_json": None,
        "checks": [],
        "total_steps": None,
        "on_failure": "stop",
    }
    d.update(extra)
    return d


def nemo_steps() -> list[dict[str, Any]]:
    return [
        _step("ray-stop", ["ray", "stop", "--force"], "setup", "setup", on_failure="continue"),
        _step(
            "bridge-git-status",
            ["git", "-C", BRIDGE, "status", "--short"],
            "setup",
            "setup",
            on_failure="continue",
        ),
        _step("bridge-git-head", ["git", "-C", BRIDGE, "rev-parse", "--short", "HEAD"], "setup", "setup"),
        _step("repo-git-status", ["git", "-C", REPO, "status", "--short"], "setup", "setup"),
        _step("repo-git-head", ["git", "-C", REPO, "rev-parse", "--short", "HEAD"], "setup", "setup"),
        _step(
            "bridge-import",
            ["uv", "run", "python", "-c", "import megatron.bridge; print(megatron.bridge.__file__)"],
            "check",
            "bridge_import",
        ),
        _step(
            "bridge-checks",
            ["uv", "run", "python", "-m", "pytest", "-q", "tests/unit_tests/models/test_param_mapping.py"],
            "check",
            "bridge_checks",
            cwd=BRIDGE,
        ),
        _step(
            "l0-grpo-megatron",
            ["uv", "run", "bash", "tests/functional/grpo_megatron.sh"],
            "train",
            "framework_run",
            title="Level 0: Megatron policy GRPO smoke (grpo_megatron.sh)",
            total_steps=2,
            env={
                "PYTHONPATH": f"{BRIDGE}/src:{BRIDGE}/3rdparty/Megatron-LM:{REPO}",
                "WANDB_API_KEY": "secret123",
            },
            metrics_json="{run_dir}/metrics.json",
            checks=['max(data["train/token_mult_prob_error"]) < 1.05'],
        ),
    ]


NEMO_LOGS = {
    "ray-stop": "Did not find any active Ray processes.\n",
    "bridge-git-status": " M src/megatron/bridge/models/qwen/qwen_provider.py\n?? tests/unit_tests/models/test_new.py\n",
    "bridge-git-head": "abc1234\n",
    "repo-git-status": "",
    "repo-git-head": "def5678\n",
    "bridge-import": f"{BRIDGE}/src/megatron/bridge/__init__.py\n",
    "bridge-checks": "...\n3 passed in 12.01s\n",
    "l0-grpo-megatron": (FIXTURES / "nemo_pass.log").read_text(),
}


def make_run(
    root: Path,
    framework: str,
    steps: list[dict[str, Any]],
    logs: dict[str, str],
    statuses: dict[str, tuple[str, int | None]] | None = None,
    run_status: str = "passed",
    variants: list[str] | None = None,
    metrics: dict[str, Any] | None = None,
    doctor: dict[str, Any] | None = None,
    model: str | None = "Qwen/Qwen2.5-0.5B",
    env: dict[str, str] | None = None,
) -> Path:
    run = root / f"20261121-223600-{framework}-l0"
    (run / "logs").mkdir(parents=True)
    spec = {
        "framework": framework,
        "levels": [0],
        "variants": variants or [],
        "model": model,
        "bridge_repo": BRIDGE if framework != "demo" else None,
        "repo": REPO if framework != "demo" else None,
        "overrides": [],
        "env": env or {},
        "runs_dir": str(root),
        "launcher": "local",
        "slurm": {},
        "extra": {},
    }
    (run / "spec.json").write_text(json.dumps(spec))
    (run / "plan.json").write_text(json.dumps({"spec": spec, "warnings": [], "steps": steps}))
    st_steps = []
    for i, s in enumerate(steps):
        status, code = (statuses or {}).get(s["name"], ("passed", 0))
        rel = f"logs/{i + 1:02d}-{s['name']}.log"
        if s["name"] in logs and status != "skipped":
            (run / rel).write_text(logs[s["name"]])
            (run / rel).with_suffix(".exit").write_text(f"{code}\n")
        st_steps.append(
            {
                "name": s["name"],
                "status": status,
                "pid": None,
                "pgid": None,
                "exit_code": code,
                "started": 1.0,
                "ended": 2.0,
                "log": rel,
                "reason": "an earlier step failed" if status == "skipped" else None,
            }
        )
    state = {
        "id": run.name,
        "status": run_status,
        "verdict": None,
        "launcher": "local",
        "steps": st_steps,
        "created": 1.0,
        "started": 1.0,
        "ended": 3.0,
        "current_step": 0,
        "cancel_requested": False,
    }
    (run / "state.json").write_text(json.dumps(state))
    if metrics is not None:
        (run / "metrics.json").write_text(json.dumps(metrics))
    if doctor is not None:
        (run / "doctor.json").write_text(json.dumps(doctor))
    (run / "events.jsonl").write_text('{"t":1.0,"type":"progress","step":"l0","step":2,"total":2}\n')
    return run


GOOD_METRICS = {"train/token_mult_prob_error": {"1": 1.001, "2": 1.002}, "train/loss": {"1": 0.1, "2": 0.09}}


def test_nemo_rl_pass_report(tmp_path: Path) -> None:
    run = make_run(
        tmp_path, "nemo-rl", nemo_steps(), NEMO_LOGS, metrics=GOOD_METRICS, env={"HF_TOKEN": SECRET}
    )
    v = run_verdict(run)
    assert v["verdict"] == "Pass", v["deliverables"]
    names = [d["name"] for d in v["deliverables"]]
    assert names == [
        "Bridge-side checks",
        "Local Bridge import in NeMo-RL",
        "NeMo-RL Megatron policy run",
        "Requested variants",
        "Metrics/log capture",
    ]
    assert [d["status"] for d in v["deliverables"]] == ["Pass", "Pass", "Pass", "Not requested", "Pass"]
    md = render_markdown(run)
    lines = md.splitlines()
    assert lines[0].startswith("Result: Pass - ")
    assert lines[1] == "Requested coverage: Level 0; no variants requested"
    assert lines[2] == "Model: Qwen/Qwen2.5-0.5B"
    for head in ("Deliverables:", "Evidence:", "Limitations:", "Follow-ups:"):
        assert head in lines
    assert (
        "- Bridge repo: abc1234 (/work/bridge) plus dirty files: src/megatron/bridge/models/qwen/qwen_provider.py"
        in md
    )
    assert "- NeMo-RL repo: def5678 (/work/nemo-rl) plus no dirty files" in md
    assert "Max number of steps has been reached" in md
    assert "no learning-signal or convergence claim" in md
    assert "secret123" not in md and SECRET not in md
    md_path, js_path = write_report(run)
    assert md_path.read_text() == md and json.loads(js_path.read_text())["result"] == "Pass"


def test_verl_blocked_by_rocr(tmp_path: Path) -> None:
    steps = [s for s in nemo_steps() if s["name"] != "l0-grpo-megatron"]
    steps.append(
        _step(
            "l0-ppo-lora-ddp",
            ["bash", "tests/special_e2e/run_ppo_trainer_megatron.sh"],
            "train",
            "framework_run",
            total_steps=1,
        )
    )
    logs = dict(NEMO_LOGS, **{"l0-ppo-lora-ddp": (FIXTURES / "rocr_verl_guard.log").read_text()})
    run = make_run(
        tmp_path, "verl", steps, logs, statuses={"l0-ppo-lora-ddp": ("failed", 1)}, run_status="failed"
    )
    v = run_verdict(run)
    assert v["verdict"] == "Blocked"
    assert v["primary"]["class"] == "rocr_visible_devices" and v["primary"]["step"] == "l0-ppo-lora-ddp"
    run_d = next(d for d in v["deliverables"] if d["name"] == "verl Megatron backend run")
    assert run_d["status"] == "Blocked"
    assert any("unset ROCR_VISIBLE_DEVICES" in f for f in v["follow_ups"])
    assert any("not evidence against the Bridge provider" in f for f in v["follow_ups"])
    assert render_json(run)["deliverables"][-1]["name"] == "Log capture"


def test_wrong_bridge_path_blocks(tmp_path: Path) -> None:
    logs = dict(
        NEMO_LOGS, **{"bridge-import": "/usr/lib/python3/site-packages/megatron/bridge/__init__.py\n"}
    )
    run = make_run(tmp_path, "nemo-rl", nemo_steps(), logs, metrics=GOOD_METRICS)
    v = run_verdict(run)
    imp = v["deliverables"][1]
    assert imp["status"] == "Fail" and "site-packages" in imp["detail"]
    assert v["verdict"] == "Blocked"


def test_metric_nan_and_failed_checks(tmp_path: Path) -> None:
    logs = dict(NEMO_LOGS, **{"l0-grpo-megatron": (FIXTURES / "token_mult_prob_error.log").read_text()})
    bad = {"train/token_mult_prob_error": {"1": 1.3}, "train/loss": {"1": float("nan")}}
    run = make_run(
        tmp_path,
        "nemo-rl",
        nemo_steps(),
        logs,
        metrics=bad,
        statuses={"l0-grpo-megatron": ("failed", 1)},
        run_status="failed",
    )
    v = run_verdict(run)
    assert v["verdict"] == "Fail" and v["primary"]["class"] == "metric_failure"
    cap = v["deliverables"][-1]
    assert cap["status"] == "Fail" and "train/loss" in cap["detail"]


def test_skipped_cancelled_and_variants(tmp_path: Path) -> None:
    steps = nemo_steps()
    steps.append(
        _step(
            "l1-grpo-megatron-lora",
            ["uv", "run", "bash", "tests/functional/grpo_megatron_lora.sh"],
            "train",
            "variant",
            total_steps=3,
        )
    )
    run = make_run(
        tmp_path,
        "nemo-rl",
        steps,
        NEMO_LOGS,
        metrics=GOOD_METRICS,
        statuses={"l1-grpo-megatron-lora": ("skipped", None)},
        variants=["lora"],
    )
    v = run_verdict(run)
    var = v["deliverables"][3]
    assert var["status"] == "Skipped" and "an earlier step failed" in var["detail"]
    assert v["verdict"] == "Incomplete"
    assert any("Requested variants" in f for f in v["follow_ups"])
    state = json.loads((run / "state.json").read_text())
    state["status"] = "cancelled"
    (run / "state.json").write_text(json.dumps(state))
    assert run_verdict(run)["verdict"] == "Cancelled"


def test_demo_and_report_cli(tmp_path: Path) -> None:
    steps = [
        _step(
            "demo-grpo",
            ["python", "-u", "-m", "console.demo.grpo", "--steps", "2"],
            "train",
            "framework_run",
            cwd="{run_dir}",
            total_steps=2,
            metrics_json="{run_dir}/metrics.json",
        )
    ]
    logs = {
        "demo-grpo": "Loaded configuration from: demo GRPO (reverse-the-digits task, variant=default)\n"
        "🚀 Running synchronous GRPO training (demo)\n"
        "========================= Step 1/2 =========================\n"
        "========================= Step 2/2 =========================\n"
        "Max number of steps has been reached, stopping training early\n"
    }
    run = make_run(tmp_path, "demo", steps, logs, metrics=GOOD_METRICS, model=None)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "console",
            "report",
            run.name,
            "--runs-dir",
            str(tmp_path),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["result"] == "Pass" and data["deliverables"][0]["status"] == "Not requested"
    assert (run / "report.md").read_text().startswith("Result: Pass")
    p = subprocess.run(
        [sys.executable, "-m", "console", "report", "last", "--runs-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 0 and p.stdout.startswith("Result: Pass"), p.stderr
    p = subprocess.run(
        [sys.executable, "-m", "console", "report", "no-such-run", "--runs-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 2 and "no run" in p.stderr


def test_rerun_with_fix_and_preflight_are_in_the_evidence(tmp_path: Path) -> None:
    doctor = {
        "verdict": "warn",
        "checks": [
            {"id": "disk_space", "status": "ok", "evidence": "plenty", "advice": "", "remedy": {}},
            {
                "id": "stale_ray",
                "status": "warn",
                "evidence": "raylet pid 42 is running",
                "advice": "",
                "remedy": {"commands": [["ray", "stop", "--force"]]},
            },
        ],
    }
    run = make_run(tmp_path, "nemo-rl", nemo_steps(), NEMO_LOGS, metrics=GOOD_METRICS, doctor=doctor)
    spec = json.loads((run / "spec.json").read_text())
    spec["extra"] = {
        "linked_from": "20261121-220000-nemo-rl-l0",
        "remedy": {
            "class": "cuda_graph_crash",
            "env": {},
            "unset": ["ROCR_VISIBLE_DEVICES"],
            "overrides": ["policy.generation.mcore_generation_config.num_cuda_graphs=null"],
        },
    }
    (run / "spec.json").write_text(json.dumps(spec))
    md = render_markdown(run)
    assert (
        "- Rerun: of run 20261121-220000-nemo-rl-l0 with the remedy for cuda_graph_crash applied: "
        "unset ROCR_VISIBLE_DEVICES, policy.generation.mcore_generation_config.num_cuda_graphs=null"
    ) in md
    assert "- Preflight (rl-console doctor): warn: stale_ray warn (raylet pid 42 is running)" in md


def test_metrics_outside_the_run_folder_are_not_evidence(tmp_path: Path) -> None:
    """A step's metrics_json in the repo checkout (another run may have written it) is never read:
    with no metrics.json in the run folder, the report has no metrics evidence."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "metrics.json").write_text(json.dumps({"train/loss": {"1": float("nan")}}))
    steps = nemo_steps()
    steps[-1] = {**steps[-1], "cwd": str(repo), "metrics_json": "tests/metrics.json"}
    run = make_run(tmp_path / "runs", "nemo-rl", steps, NEMO_LOGS)
    v = run_verdict(run)
    capture = next(d for d in v["deliverables"] if d["name"] == "Metrics/log capture")
    assert "nan" not in json.dumps(capture).lower(), capture
    assert str(repo) not in json.dumps(v), v
