"""visible_devices, disk_space, gpus, mcore_helpers, tools and stale_ray: real files and
filesystems; NVML, free-space and process readings stubbed only where the real thing cannot exist here."""

from __future__ import annotations

import copy
import shutil
import subprocess
import uuid

import pytest
from doctor_helpers import assert_check_shape, by_id, clean_env, make_bridge, make_git_repo

from console.doctor import run_doctor
from console.doctor.context import Probes, build_context
from console.doctor.devices import Gpu, GpuReading
from console.doctor.disk import GIB, model_params
from console.spec import RunSpec

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    clean_env(monkeypatch)


def one(spec: RunSpec, check: str, **kw) -> dict:
    entry = by_id(run_doctor(spec, checks=[check], **kw))[check]
    assert_check_shape(entry)
    return entry


# visible_devices -------------------------------------------------------------------------------


@pytest.mark.parametrize("rocm", ["ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"])
def test_rocm_with_cuda_blocks_with_unset_remedy(monkeypatch, rocm):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setenv(rocm, "0,1")
    check = one(RunSpec(framework="demo"), "visible_devices")
    assert check["status"] == "block"
    assert check["remedy"]["unset"] == [rocm]
    assert "Please don't set ROCR_VISIBLE_DEVICES" in check["advice"]


def test_visible_devices_ok_and_plan_unset_applies(monkeypatch):
    assert one(RunSpec(framework="demo"), "visible_devices")["status"] == "ok"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("ROCR_VISIBLE_DEVICES", "0")
    plan = {
        "steps": [{"name": "rerun", "kind": "train", "gpus": 0, "env": {}, "unset": ["ROCR_VISIBLE_DEVICES"]}]
    }
    assert one(RunSpec(framework="demo"), "visible_devices", plan=plan)["status"] == "ok"


@pytest.mark.parametrize(
    ("framework", "env", "status", "needle"),
    [
        # verl: Worker._setup_env_cuda_visible_devices raises in every worker (Ray sets CUDA_VISIBLE_DEVICES)
        ("verl", {"ROCR_VISIBLE_DEVICES": "0"}, "block", "also with ROCR_VISIBLE_DEVICES alone"),
        (
            "verl",
            {"ROCR_VISIBLE_DEVICES": "0", "CUDA_VISIBLE_DEVICES": "0"},
            "block",
            "Please don't set ROCR",
        ),
        ("verl", {"HIP_VISIBLE_DEVICES": "0,1", "CUDA_VISIBLE_DEVICES": "1"}, "block", "inconsistant values"),
        ("verl", {"HIP_VISIBLE_DEVICES": "0,1"}, "block", "each GPU actor's CUDA_VISIBLE_DEVICES"),
        # NeMo-RL has no such guard; CUDA ignores these variables
        (
            "nemo-rl",
            {"ROCR_VISIBLE_DEVICES": "0", "CUDA_VISIBLE_DEVICES": "0"},
            "warn",
            "NeMo-RL has no guard",
        ),
        ("nemo-rl", {"HIP_VISIBLE_DEVICES": "0"}, "warn", "NeMo-RL has no guard"),
        ("demo", {"ROCR_VISIBLE_DEVICES": "0"}, "ok", ""),
    ],
)
def test_visible_devices_severity_per_framework(monkeypatch, framework, env, status, needle):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    check = one(RunSpec(framework=framework), "visible_devices")
    assert check["status"] == status, check
    assert needle in check["advice"]
    rocm = [n for n in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES") if n in env]
    if status != "ok":
        assert check["remedy"]["unset"] == rocm


# disk_space -----------------------------------------------------------------------------------


def test_model_params_from_names():
    assert model_params("Qwen/Qwen2.5-0.5B") == pytest.approx(0.5e9)
    assert model_params("Qwen/Qwen3-0.6B") == pytest.approx(0.6e9)
    assert model_params("org/tiny-600M-instruct") == pytest.approx(6e8)
    assert model_params("gpt2") is None


def test_disk_need_estimated_from_model_size(tmp_path, monkeypatch):
    hf, runs = tmp_path / "hf", tmp_path / "runs"
    monkeypatch.setenv("HF_HOME", str(hf))
    spec = RunSpec(framework="nemo-rl", model="Qwen/Qwen2.5-7B", runs_dir=str(runs))

    def stub(free_gib: float):
        return Probes(free_bytes=lambda path: int(free_gib * GIB))

    # 7e9 params * 2 bytes * 1.2 margin = 15.6 GiB for the download; every place shares one filesystem.
    full = one(spec, "disk_space", probes=stub(10))
    assert full["status"] == "block"
    assert "HF_HUB_CACHE" in full["evidence"] and "need 15.6 GiB" in full["evidence"]
    assert "No space left on device" in full["advice"]
    assert one(spec, "disk_space", probes=stub(25))["status"] == "warn"
    assert one(spec, "disk_space", probes=stub(40))["status"] == "ok"


def test_disk_checkpoints_counted_for_save_resume_level(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    repo = tmp_path / "verl"
    spec = RunSpec(
        framework="verl",
        model="Qwen/Qwen2.5-0.5B",
        levels=[0, 1],
        repo=str(repo),
        runs_dir=str(tmp_path / "runs"),
    )
    check = one(spec, "disk_space", probes=Probes(free_bytes=lambda p: 100 * GIB))
    assert f"checkpoints {repo}/checkpoints" in check["evidence"]


@pytest.fixture
def small_fs(tmp_path):
    """A real 1 MiB tmpfs (root only); skipped where mounting is not allowed."""
    mnt = tmp_path / f"small-{uuid.uuid4().hex[:6]}"
    mnt.mkdir()
    if not shutil.which("mount"):
        pytest.skip("no mount")
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount tmpfs: {res.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_disk_space_on_a_real_small_filesystem(small_fs, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(small_fs / "hf"))
    spec = RunSpec(framework="verl", model="gpt2", runs_dir=str(small_fs / "runs"))
    check = one(spec, "disk_space")
    assert check["status"] == "block", check
    assert str(small_fs / "hf") in check["evidence"]
    assert "1.0 MiB free" in check["evidence"] or "MiB free" in check["evidence"]


# gpus -----------------------------------------------------------------------------------------


def _gpus(*caps: tuple[int, int]) -> Probes:
    return Probes(gpus=lambda: GpuReading(gpus=[Gpu(i, "NVIDIA H100", c) for i, c in enumerate(caps)]))


NO_DRIVER = Probes(gpus=lambda: GpuReading(error="no NVIDIA driver (NVML Shared Library Not Found)"))


def test_gpus_against_need():
    nemo = RunSpec(framework="nemo-rl")
    assert one(nemo, "gpus", probes=NO_DRIVER)["status"] == "block"
    assert one(RunSpec(framework="demo"), "gpus", probes=NO_DRIVER)["status"] == "warn"
    assert one(nemo, "gpus", probes=_gpus((9, 0), (9, 0)))["status"] == "ok"
    few = one(nemo, "gpus", probes=_gpus((9, 0)))
    assert few["status"] == "block" and "needs 2 GPU(s) but 1" in few["advice"]
    plan = {"steps": [{"name": "big", "kind": "train", "gpus": 4, "env": {}}]}
    assert one(nemo, "gpus", plan=plan, probes=_gpus((9, 0), (9, 0)))["status"] == "block"


def test_gpus_cuda_visible_devices_limits_and_blackwell(monkeypatch):
    blackwell = one(RunSpec(framework="nemo-rl", levels=[0, 3]), "gpus", probes=_gpus((10, 0), (10, 0)))
    assert blackwell["status"] == "warn" and "Blackwell" in blackwell["advice"]
    assert (
        one(RunSpec(framework="nemo-rl", levels=[0]), "gpus", probes=_gpus((10, 0), (10, 0)))["status"]
        == "ok"
    )
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert one(RunSpec(framework="nemo-rl"), "gpus", probes=_gpus((9, 0), (9, 0)))["status"] == "block"


def test_gpus_cuda_visible_devices_by_uuid(monkeypatch):
    """CUDA_VISIBLE_DEVICES naming GPUs by uuid (or a unique prefix) counts them as CUDA does."""
    gpus = [Gpu(i, "NVIDIA H100", (9, 0), uuid=f"GPU-{i}aa1f52-0c1b") for i in range(3)]
    probes = Probes(gpus=lambda: GpuReading(gpus=gpus))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-2aa1,GPU-0aa1f52-0c1b")
    ok = one(RunSpec(framework="nemo-rl"), "gpus", probes=probes)
    assert ok["status"] == "ok" and "2 visible of 3" in ok["evidence"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-2aa1,GPU-9,0")  # CUDA stops at the unknown uuid
    assert one(RunSpec(framework="nemo-rl"), "gpus", probes=probes)["status"] == "block"


def test_gpus_real_nvml_reading():
    check = one(RunSpec(framework="demo"), "gpus")
    assert check["status"] in ("ok", "warn")
    if check["status"] == "warn":
        assert "no NVIDIA driver" in check["evidence"]


# mcore_helpers --------------------------------------------------------------------------------


def test_mcore_helpers_states(tmp_path):
    bridge = make_bridge(tmp_path / "Megatron-Bridge")
    datasets = bridge / "3rdparty" / "Megatron-LM" / "megatron" / "core" / "datasets"
    spec = RunSpec(framework="verl", bridge_repo=str(bridge), repo=str(tmp_path / "verl"))
    no_config = Probes(which=lambda name: None)
    with_config = Probes(which=lambda name: f"/usr/bin/{name}")
    assert one(spec, "mcore_helpers")["status"] == "warn"  # no Megatron-LM submodule
    datasets.mkdir(parents=True)
    (datasets / "helpers.cpp").write_text("// source\n")
    blocked = one(spec, "mcore_helpers", probes=no_config)
    assert blocked["status"] == "block" and "python3-config: not on PATH" in blocked["evidence"]
    cmd = blocked["remedy"]["commands"][0]
    assert cmd[:3] == ["make", "-C", str(datasets)] and cmd[3].startswith("LIBEXT=.")
    # writable and python3-config present: Bridge's initialize_megatron builds it at start (compile_helpers)
    writable = one(spec, "mcore_helpers", probes=with_config)
    assert writable["status"] == "ok" and "compile_helpers" in writable["advice"]
    (datasets / "helpers_cpp").write_bytes(b"\x7fELF")
    assert "helpers_cpp but no" in one(spec, "mcore_helpers", probes=with_config)["evidence"]
    (datasets / f"helpers_cpp{cmd[3].removeprefix('LIBEXT=')}").write_bytes(b"\x7fELF")
    assert one(spec, "mcore_helpers", probes=no_config)["status"] == "ok"


def test_mcore_helpers_not_built_on_a_read_only_filesystem(small_fs):
    """A read-only Megatron-LM (a real read-only mount): compile_helpers cannot build there."""
    datasets = small_fs / "Megatron-LM" / "megatron" / "core" / "datasets"
    datasets.mkdir(parents=True)
    res = subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], capture_output=True)
    if res.returncode != 0:
        pytest.skip("cannot remount read-only")
    try:
        spec = RunSpec(framework="verl", env={"PYTHONPATH": str(small_fs / "Megatron-LM")})
        check = one(spec, "mcore_helpers", probes=Probes(which=lambda name: f"/usr/bin/{name}"))
        assert check["status"] == "warn", check
        assert "not writable" in check["advice"]
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_fs)], capture_output=True)


# tools ----------------------------------------------------------------------------------------

WRAPPER = 'if [ "${VERL_USE_UV:-1}" != 0 ]; then LAUNCH=(uv run --frozen python3); fi\n'


def test_verl_tools_block_then_ok_with_remedies(tmp_path):
    verl = make_git_repo(tmp_path / "verl", {"tests/special_e2e/run_ppo_trainer_megatron.sh": WRAPPER})
    spec = RunSpec(
        framework="verl",
        repo=str(verl),
        bridge_repo=str(tmp_path / "b"),
        env={"HOME": str(tmp_path / "home")},
    )
    no_tools = Probes(which=lambda name: None)
    check = one(spec, "tools", probes=no_tools)
    assert check["status"] == "block"
    remedy = check["remedy"]
    assert remedy["env"] == {"VERL_USE_UV": "0"}
    assert "global_profiler.tool=null" in remedy["overrides"]
    assert "reward.reward_model.enable=False" in remedy["overrides"]
    prep = remedy["commands"][0]
    assert prep == [
        "python3",
        "examples/data_preprocess/gsm8k.py",
        "--local_save_dir",
        str(tmp_path / "home" / "data" / "gsm8k"),
    ]
    # Apply the remedies (as a rerun would) and provide the data: nothing blocks any more.
    data = tmp_path / "home" / "data" / "gsm8k"
    data.mkdir(parents=True)
    (data / "train.parquet").write_bytes(b"PAR1")
    (data / "test.parquet").write_bytes(b"PAR1")
    fixed = RunSpec(
        framework="verl",
        repo=str(verl),
        bridge_repo=str(tmp_path / "b"),
        env={"HOME": str(tmp_path / "home"), "VERL_USE_UV": "0"},
        overrides=list(remedy["overrides"]),
    )
    check = one(fixed, "tools", probes=Probes(which=lambda name: f"/usr/bin/{name}"))
    assert check["status"] == "ok", check
    assert "disabled by override (a limitation to report)" in check["evidence"]


def test_nemo_rl_fingerprint_and_cuda_arch(tmp_path):
    nemo = make_git_repo(tmp_path / "nemo-rl", {"tools/generate_fingerprint.py": "print('current-abc')\n"})
    stored = tmp_path / "opt_fingerprint"
    stored.write_text("container-xyz\n")
    spec = RunSpec(framework="nemo-rl", repo=str(nemo), bridge_repo=str(tmp_path / "b"))
    probes = Probes(
        which=lambda name: f"/usr/bin/{name}", gpus=lambda: GpuReading(gpus=[Gpu(0, "H100", (9, 0))])
    )
    ctx = build_context(spec, probes=probes)
    ctx.catalog = copy.deepcopy(ctx.catalog)
    ctx.catalog["paths"]["nemo_rl_fingerprint_file"] = str(stored)
    check = by_id(run_doctor(spec, checks=["tools"], context=ctx))["tools"]
    assert check["status"] == "block"  # TORCH_CUDA_ARCH_LIST is unset
    assert check["remedy"]["env"] == {"NRL_FORCE_REBUILD_VENVS": "true", "TORCH_CUDA_ARCH_LIST": "9.0"}
    assert "fingerprint" in check["evidence"] and "differs" in check["evidence"]
    stored.write_text("current-abc\n")
    ctx.env["TORCH_CUDA_ARCH_LIST"] = "9.0"
    check = by_id(run_doctor(spec, checks=["tools"], context=ctx))["tools"]
    assert check["status"] == "ok", check
    assert "fingerprint matches" in check["evidence"]


# stale_ray ------------------------------------------------------------------------------------


def test_stale_ray_from_process_names():
    running = Probes(processes=lambda: [(4242, "gcs_server"), (4243, "raylet"), (1, "bash")])
    check = one(RunSpec(framework="demo"), "stale_ray", probes=running)
    assert check["status"] == "warn" and "gcs_server (pid 4242)" in check["evidence"]
    assert check["remedy"]["commands"] == [["ray", "stop", "--force"]]
    assert one(RunSpec(framework="demo"), "stale_ray", probes=Probes(processes=lambda: []))["status"] == "ok"
