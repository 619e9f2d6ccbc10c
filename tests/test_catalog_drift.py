"""Catalog drift: every plan step resolved against the checkouts (here: the upstream manifest).

The manifest (console/catalog/upstream_manifest.json) holds the upstream facts scripts/check_upstream.py
recorded from real NeMo-RL, verl and Megatron-Bridge checkouts: file paths, the key trees of the configs
the catalog uses, the keys each wrapper sets. These tests resolve real plans against it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from console.catalog import load_framework
from console.plan import build_plan
from console.plan.builder import resolve_plan
from console.plan.resolve import ManifestSource, load_manifest
from tests.plan_helpers import make_repos, spec

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def repos(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("NEMO_RL_REPO", "VERL_REPO", "BRIDGE_REPO", "PYTHONPATH", "VERL_USE_UV"):
        monkeypatch.delenv(name, raising=False)
    return make_repos(tmp_path)


def _manifest_drift(plan, framework: str) -> list[dict]:
    source = ManifestSource(load_manifest(), {"repo": framework, "bridge": "bridge"})
    return resolve_plan(plan, plan.resolve_inputs, source)


def test_manifest_records_commits_and_config_trees():
    m = load_manifest()
    assert set(m["repos"]) == {"nemo-rl", "verl", "bridge"}
    for info in m["repos"].values():
        assert len(info["commit"]) == 40 and info["files"]
    assert (
        "policy.generation.refit_transport"
        in m["repos"]["nemo-rl"]["configs"]["examples/configs/grpo_math_1B_megatron.yaml"]
    )


def _all_cases():
    for fw in ("nemo-rl", "verl"):
        cat = load_framework(fw)
        for lv in cat.levels:
            combos = ([] if lv.requires_variant else [()]) + [
                (v.name,) for v in cat.variants if lv.number in v.levels
            ]
            for vs in combos:
                yield fw, lv.number, vs


@pytest.mark.parametrize(
    ("framework", "level", "variants"),
    list(_all_cases()),
    ids=lambda x: str(x) if not isinstance(x, tuple) else "-".join(x) or "base",
)
def test_every_catalog_plan_resolves_on_the_manifest(repos, framework, level, variants):
    plan = build_plan(spec(framework, repos, (level,), variants))
    assert _manifest_drift(plan, framework) == []


def test_readme_example_resolves_and_uses_upstream_delta_keys(repos):
    # README: rl-console plan --framework nemo-rl --level 0 --level 2 --variant delta-compression
    plan = build_plan(spec("nemo-rl", repos, (0, 2), ("delta-compression",)))
    assert _manifest_drift(plan, "nemo-rl") == []
    argv = plan.step("l2-grpo-non-colocated").argv
    assert "policy.generation.refit_transport=vllm_zmq_sparse" in argv
    assert not any("generation.delta_compression" in a for a in argv)


def test_drift_missing_script(repos):
    plan = build_plan(spec("nemo-rl", repos, (0,)))
    step = plan.step("l0-grpo-megatron")
    step.argv[3] = "tests/functional/grpo_megatorn.sh"
    found = [d for d in _manifest_drift(plan, "nemo-rl") if d["step"] == "l0-grpo-megatron"]
    assert found[0]["class"] == "catalog_drift" and found[0]["kind"] == "missing_path"
    assert found[0]["closest"] == "tests/functional/grpo_megatron.sh"


def test_drift_missing_test_file(repos):
    # the procedure's Bridge test that Megatron-Bridge main never had
    plan = build_plan(spec("verl", repos, (0,)))
    plan.step("bridge-checks").argv.append("tests/unit_tests/training/test_integration.py")
    found = [d for d in _manifest_drift(plan, "verl") if d["step"] == "bridge-checks"]
    assert [(d["kind"], d["item"]) for d in found] == [
        ("missing_path", "tests/unit_tests/training/test_integration.py")
    ]
    assert found[0]["closest"].startswith("tests/unit_tests/training/")
    assert "does not exist" in found[0]["message"]


def test_drift_unknown_key_in_catalog_overrides(repos):
    # the procedure's delta-compression keys, which NeMo-RL's loader refuses
    plan = build_plan(spec("nemo-rl", repos, (2,), ("delta-compression",)))
    role, config, catalog_args, user_args = plan.resolve_inputs["l2-grpo-non-colocated"]
    plan.resolve_inputs["l2-grpo-non-colocated"] = (
        role,
        config,
        [
            *catalog_args,
            "policy.generation.delta_compression.enabled=true",
            "+policy.generation.refit_transport=vllm_zmq_sparse",
        ],
        user_args,
    )
    found = _manifest_drift(plan, "nemo-rl")
    assert [(d["kind"], d["item"]) for d in found] == [
        ("unknown_key", "policy.generation.delta_compression.enabled=true"),
        ("key_exists", "+policy.generation.refit_transport=vllm_zmq_sparse"),
    ]
    assert found[0]["closest"] and found[0]["origin"] == "catalog"


def test_drift_is_per_step_config(repos):
    # Level 1 runs a GRPO wrapper (grpo_math_1B_megatron.yaml) and the SFT wrapper (sft.yaml):
    # each step's arguments are checked against the config that step loads, not one for all
    plan = build_plan(spec("nemo-rl", repos, (1,)))
    for name, arg in (
        ("l1-grpo-megatron-lora", "sft.val_period=2"),
        ("l1-sft-resume-diamond", "grpo.max_num_steps=5"),
    ):
        role, config, catalog_args, _ = plan.resolve_inputs[name]
        plan.resolve_inputs[name] = (role, config, catalog_args, [arg])
    found = {d["step"]: d for d in _manifest_drift(plan, "nemo-rl")}
    assert found["l1-grpo-megatron-lora"]["where"] == "examples/configs/grpo_math_1B_megatron.yaml"
    assert found["l1-sft-resume-diamond"]["where"] == "examples/configs/sft.yaml"
    # swapped, both fit their own step's config
    for name, arg in (
        ("l1-grpo-megatron-lora", "grpo.max_num_steps=5"),
        ("l1-sft-resume-diamond", "sft.val_period=2"),
    ):
        role, config, catalog_args, _ = plan.resolve_inputs[name]
        plan.resolve_inputs[name] = (role, config, catalog_args, [arg])
    assert _manifest_drift(plan, "nemo-rl") == []


def test_wrapper_added_keys_count_for_later_arguments(repos):
    # verl's wrapper '+'-adds override_optimizer_config keys before "$@": a plain override of such a
    # key fits, a second '+' does not (Hydra: "Could not append to config. An item is already at ...")
    plan = build_plan(spec("verl", repos, (0,)))
    added = load_manifest()["repos"]["verl"]["wrappers"]["tests/special_e2e/run_ppo_trainer_megatron.sh"][
        "added"
    ]
    key = next(k for k in added if "optimizer_cpu_offload" in k)
    role, config, catalog_args, _ = plan.resolve_inputs["l0-ppo-lora-ddp"]
    plan.resolve_inputs["l0-ppo-lora-ddp"] = (role, config, catalog_args, [f"{key}=True", f"+{key}=True"])
    found = _manifest_drift(plan, "verl")
    assert [(d["kind"], d["origin"]) for d in found] == [("key_exists", "user")]


def test_checkout_drift_shows_in_plan_output_and_blocks_run(repos, tmp_path):
    bridge, nemo, _ = repos
    env = {"PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    args = [
        "--framework",
        "nemo-rl",
        "--repo",
        nemo,
        "--bridge-repo",
        bridge,
        "--runs-dir",
        str(tmp_path / "runs"),
    ]
    out = subprocess.run(
        [sys.executable, "-m", "console", "plan", *args], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0
    assert (
        "catalog_drift: bridge-checks: tests/unit_tests/models/test_model_provider_mixin.py does not exist"
        in out.stdout
    )
    data = json.loads(
        subprocess.run(
            [sys.executable, "-m", "console", "plan", *args, "--json"],
            capture_output=True,
            text=True,
            env=env,
        ).stdout
    )
    assert {d["class"] for d in data["drift"]} == {"catalog_drift"}
    run = subprocess.run(
        [sys.executable, "-m", "console", "run", *args, "--headless", "--no-doctor"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 3 and "--allow-drift" in run.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_pytest_exit_4_is_blocked_drift_not_a_fail(tmp_path):
    """A Bridge-side check that names a test file the checkout lacks: real pytest exits 4; the run
    reports Bridge-side checks Blocked (catalog_drift) and says which later steps did not run and why."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from runs_support import reap_runs, wait_finished

    from console.runs.launch import start_run
    from console.spec import RunSpec
    from console.triage.verdict import run_verdict

    checkout = tmp_path / "bridge"
    checkout.mkdir()
    runs_dir = tmp_path / "runs"
    plan = {
        "steps": [
            {
                "name": "bridge-checks",
                "argv": [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "tests/unit_tests/training/test_integration.py",
                ],
                "env": {},
                "cwd": str(checkout),
                "kind": "check",
                "deliverable": "bridge_checks",
                "notes": ["Upstream wins over the procedure: test note"],
            },
            {
                "name": "l0-run",
                "argv": [sys.executable, "-c", "print('train')"],
                "env": {},
                "cwd": str(checkout),
                "kind": "train",
                "deliverable": "framework_run",
            },
        ]
    }
    try:
        run_dir = start_run(RunSpec(framework="nemo-rl", runs_dir=str(runs_dir)), plan=plan)
        state = wait_finished(run_dir, timeout=90)
    finally:
        reap_runs(runs_dir)
    assert [s["exit_code"] for s in state["steps"]] == [4, None]
    assert state["steps"][1]["status"] == "skipped" and "bridge-checks" in state["steps"][1]["reason"]
    v = run_verdict(run_dir)
    assert v["verdict"] == "Blocked"
    checks = next(d for d in v["deliverables"] if d["name"] == "Bridge-side checks")
    assert checks["status"] == "Blocked" and v["primary"]["class"] == "catalog_drift"
    # the report keeps the catalog's note (Limitations) and the upstream commits it was verified against
    from console.report import render_markdown

    md = render_markdown(run_dir)
    limitations = md.split("Limitations:", 1)[1]
    assert "- Upstream wins over the procedure: test note" in limitations
    commit = load_manifest()["repos"]["nemo-rl"]["commit"][:12]
    assert f"- Upstream: catalog verified against upstream nemo-rl {commit}" in md


def test_doctor_reads_the_vendored_bridge_gitlink(tmp_path):
    # an uninitialised submodule: git inside the empty directory would answer for NeMo-RL itself
    from console.doctor.repos import gitlink

    repo = tmp_path / "nemo-rl"
    rel = "3rdparty/Megatron-Bridge-workspace/Megatron-Bridge"
    pinned = "8c46dc4259" + "0" * 30

    def git(*a: str) -> None:
        subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)

    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git("update-index", "--add", "--cacheinfo", f"160000,{pinned},{rel}")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "pin")
    (repo / rel).mkdir(parents=True)
    assert gitlink(repo, rel) == pinned
    assert gitlink(repo, "nope") is None


def test_checkout_drift_shows_in_the_new_run_preview(repos):
    """The New run screen's command preview (F2) names the drift above the commands."""
    from console.tui.screens.newrun import render_preview

    plan = build_plan(spec("nemo-rl", repos))
    assert plan.drift
    text = render_preview(plan).plain
    head, _, _ = text.partition("1. ")
    assert (
        "catalog drift: bridge-checks: tests/unit_tests/models/test_model_provider_mixin.py does not exist"
        in head
    )
