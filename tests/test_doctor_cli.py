"""`rl-console doctor` end to end (real CLI process), `preflight()` writing doctor.json, redaction."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from doctor_helpers import assert_check_shape, by_id, clean_env, make_bridge, make_git_repo, make_hf_snapshot

from console.doctor import CHECK_IDS, preflight, run_doctor
from console.errors import SpecError
from console.spec import RunSpec

pytestmark = pytest.mark.timeout(180)
EXPECTED_IDS = [
    "repo_state",
    "run_interpreter",
    "bridge_import_driver",
    "bridge_import_ray_worker",
    "visible_devices",
    "disk_space",
    "hf_snapshot",
    "stale_ray",
    "gpus",
    "mcore_helpers",
    "tools",
    "catalog_drift",
]


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "console", "doctor", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        cwd=cwd,
        timeout=170,
    )


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    clean_env(monkeypatch)


def test_demo_json_has_every_check(tmp_path):
    out = cli("--json", "--runs-dir", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert set(result) == {"verdict", "checks", "interpreter"}
    assert result["interpreter"]["command"] == [sys.executable]  # the demo runs in the console's interpreter
    assert [c["id"] for c in result["checks"]] == EXPECTED_IDS == list(CHECK_IDS)
    for check in result["checks"]:
        assert_check_shape(check)
    checks = by_id(result)
    assert checks["repo_state"]["evidence"] == "not applicable to the demo"
    assert result["verdict"] in ("ok", "warn")


def test_block_exits_3_and_table_shows_remedy(tmp_path):
    args = ["--env", "ROCR_VISIBLE_DEVICES=0", "--env", "CUDA_VISIBLE_DEVICES=0", "--runs-dir", str(tmp_path)]
    out = cli(*args)
    assert out.returncode == 3, out.stderr
    assert "visible_devices" in out.stdout and "BLOCK" in out.stdout
    assert "remedy: unset ROCR_VISIBLE_DEVICES" in out.stdout
    assert out.stdout.rstrip().endswith("verdict: block")
    assert json.loads(cli("--json", *args).stdout)["verdict"] == "block"


def test_bad_spec_exits_2_with_one_line():
    out = cli("--env", "NOEQUALS")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "KEY=VALUE" in out.stderr
    with pytest.raises(SpecError):
        run_doctor(RunSpec(), checks=["no_such_check"])


def test_preflight_writes_redacted_doctor_json(tmp_path):
    token = "hf_" + "a1B2" * 8
    spec = RunSpec(env={"ROCR_VISIBLE_DEVICES": token, "CUDA_VISIBLE_DEVICES": "0"}, runs_dir=str(tmp_path))
    run_dir = tmp_path / "20261121-223600-demo-l0"
    result = preflight(spec, None, run_dir)
    assert result["verdict"] == "block"
    saved = (run_dir / "doctor.json").read_text()
    assert json.loads(saved) == result
    assert token not in saved and "***" in saved
    assert not [p for p in run_dir.iterdir() if p.name.startswith(".doctor.")]
    assert preflight(spec, None, None)["verdict"] == "block"  # no run folder: nothing written


@pytest.mark.ray
def test_verl_every_check_with_real_parts(tmp_path, monkeypatch):
    """All ten checks for a verl spec whose checkouts, Bridge package and HF snapshot the test made."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_HOME", str(home / "hf"))
    snap = make_hf_snapshot(home / "hf" / "hub", "Qwen/Qwen2.5-0.5B")
    shutil.copytree(snap, home / "models" / "Qwen" / "Qwen2.5-0.5B")  # verl's default MODEL_PATH
    bridge = make_bridge(tmp_path / "Megatron-Bridge")
    verl = make_git_repo(tmp_path / "verl", {"setup.py": "# verl\n"})
    out = cli(
        "--framework",
        "verl",
        "--bridge-repo",
        str(bridge),
        "--repo",
        str(verl),
        "--env",
        "NUM_GPUS=0",
        "--runs-dir",
        str(tmp_path / "runs"),
        "--json",
    )
    assert out.returncode in (0, 3), out.stderr
    result = json.loads(out.stdout)
    assert [c["id"] for c in result["checks"]] == EXPECTED_IDS
    for check in result["checks"]:
        assert_check_shape(check)
    checks = by_id(result)
    for cid in ("repo_state", "bridge_import_driver", "bridge_import_ray_worker", "hf_snapshot"):
        assert checks[cid]["status"] == "ok", checks[cid]
    assert checks["tools"]["status"] == "block"  # no reward model, nvtx or nsys here
    assert "reward.reward_model.enable=False" in checks["tools"]["remedy"]["overrides"]
    assert result["verdict"] == "block" and out.returncode == 3
