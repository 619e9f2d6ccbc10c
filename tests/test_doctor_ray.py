"""bridge_import_ray_worker and stale_ray with real Ray: a throw-away local cluster and a
`ray start --head` cluster that the test starts and always stops (only its own processes)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from doctor_helpers import assert_check_shape, by_id, clean_env, make_bridge, make_git_repo, place_decoy

from console.doctor import run_doctor
from console.doctor.context import Probes
from console.spec import RunSpec

pytestmark = [pytest.mark.ray, pytest.mark.timeout(180)]
RAY_BIN = str(Path(sys.executable).with_name("ray"))


def _gcs_pids() -> set[int]:
    return {p.pid for p in psutil.process_iter(["name"]) if p.info["name"] == "gcs_server"}


def _spec(bridge: Path, repo: Path, **env: str) -> RunSpec:
    return RunSpec(framework="verl", bridge_repo=str(bridge), repo=str(repo), env=dict(env))


def test_worker_on_throwaway_cluster_ok_then_block_on_decoy(tmp_path, monkeypatch):
    clean_env(monkeypatch)
    no_cluster = Probes(processes=lambda: [])  # whatever else runs here, use a throw-away cluster
    before = _gcs_pids()
    bridge = make_bridge(tmp_path / "Megatron-Bridge")
    verl = make_git_repo(tmp_path / "verl", {"setup.py": "# verl\n"})
    check = by_id(run_doctor(_spec(bridge, verl), checks=["bridge_import_ray_worker"], probes=no_cluster))[
        "bridge_import_ray_worker"
    ]
    assert_check_shape(check)
    assert check["status"] == "ok", check
    assert "throw-away local cluster" in check["evidence"]
    assert str(bridge / "src" / "megatron" / "bridge") in check["evidence"]

    # The checkout lacks the package; a decoy sits at the verl repo root, which is on PYTHONPATH.
    bad_bridge = make_bridge(tmp_path / "Bridge-without-package", with_package=False)
    place_decoy(verl)
    check = by_id(
        run_doctor(_spec(bad_bridge, verl), checks=["bridge_import_ray_worker"], probes=no_cluster)
    )["bridge_import_ray_worker"]
    assert check["status"] == "block", check
    assert str(verl / "megatron" / "bridge") in check["evidence"]
    assert "runtime environment" in check["advice"]
    # The throw-away clusters are gone.
    deadline = time.monotonic() + 15
    while _gcs_pids() - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not (_gcs_pids() - before)


def _stop_own_cluster(temp_dir: str) -> None:
    procs = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(temp_dir in arg for arg in proc.info["cmdline"] or []):
                procs.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.send_signal(signal.SIGTERM)
    _, alive = psutil.wait_procs(procs, timeout=3)
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    psutil.wait_procs(alive, timeout=5)


@pytest.fixture
def head_cluster():
    """`ray start --head` with 1 CPU and its own short temp dir, started without PYTHONPATH."""
    if not os.path.exists(RAY_BIN):
        pytest.skip("ray CLI not installed")
    temp_dir = tempfile.mkdtemp(prefix="rlcd", dir="/tmp")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}
    env["RAY_AUTH_MODE"] = "disabled"  # Ray 2.60's `ray start` turns token auth on; drivers here don't use it
    port = str(20000 + os.getpid() % 20000)
    try:
        out = subprocess.run(
            [
                RAY_BIN,
                "start",
                "--head",
                "--num-cpus=1",
                "--include-dashboard=false",
                f"--port={port}",
                f"--temp-dir={temp_dir}",
                "--disable-usage-stats",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=90,
            stdin=subprocess.DEVNULL,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        match = re.search(r"--address='([^']+)'", out.stdout + out.stderr)
        assert match, out.stdout[-2000:]
        yield match.group(1)
    finally:
        _stop_own_cluster(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)


def test_existing_cluster_worker_import_and_stale_ray(tmp_path, monkeypatch, head_cluster):
    clean_env(monkeypatch)
    bridge = make_bridge(tmp_path / "Megatron-Bridge")
    verl = make_git_repo(tmp_path / "verl", {"setup.py": "# verl\n"})
    result = run_doctor(
        _spec(bridge, verl, RAY_ADDRESS=head_cluster), checks=["bridge_import_ray_worker", "stale_ray"]
    )
    checks = by_id(result)
    worker, stale = checks["bridge_import_ray_worker"], checks["stale_ray"]
    assert worker["status"] == "ok", worker["evidence"]
    assert f"existing cluster ({head_cluster})" in worker["evidence"]
    assert str(bridge / "src") in worker["evidence"]
    assert stale["status"] == "warn"
    assert "gcs_server" in stale["evidence"]
    assert stale["remedy"]["commands"] == [["ray", "stop", "--force"]]
    assert_check_shape(stale)

    # The cluster's workers cannot import megatron.bridge at all.
    empty = make_bridge(tmp_path / "Bridge-without-package", with_package=False)
    worker = by_id(
        run_doctor(_spec(empty, verl, RAY_ADDRESS=head_cluster), checks=["bridge_import_ray_worker"])
    )["bridge_import_ray_worker"]
    assert worker["status"] == "block", worker
    assert "ModuleNotFoundError" in worker["evidence"]
