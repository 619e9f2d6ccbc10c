"""GPU (real no-driver path here; NVML faked only where a GPU cannot exist), host, process
trees, the 1 Hz sampler publishing to an EventBus, and verl's JSONL file logger."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from console.events import EventBus, read_events
from console.monitor.gpu import GpuSampler
from console.monitor.host import HostSampler, default_disk_paths
from console.monitor.procs import has_marker, run_process_tree
from console.monitor.sampler import ResourceSampler
from console.runs.sampling import SamplerThread

pytestmark = pytest.mark.timeout(60)


def test_real_nvml_without_driver() -> None:
    """This machine has no NVIDIA driver: the real pynvml must give a clear state, not raise."""
    try:
        import pynvml

        pynvml.nvmlInit()
        pytest.skip("an NVIDIA driver is present")
    except Exception:  # noqa: BLE001
        pass
    snap = GpuSampler().sample()
    assert snap.available is False
    assert snap.reason.startswith("no NVIDIA driver")
    assert snap.to_event_data()["devices"] == []


class NVMLError(Exception):
    pass


class NVMLError_GpuIsLost(NVMLError):  # noqa: N801 - same name as pynvml's
    pass


class NVMLError_NotSupported(NVMLError):  # noqa: N801
    pass


class FakeNvml:
    """Stands in for pynvml (no GPU here): 3 devices, one MIG, one lost mid-run."""

    NVML_DEVICE_MIG_ENABLE = 1

    def __init__(self, our_pid: int) -> None:
        self.our_pid = our_pid
        self.lost = False
        self.calls = 0

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlSystemGetDriverVersion(self) -> bytes:
        return b"550.54"

    def nvmlDeviceGetCount(self) -> int:
        return 3

    def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
        if i == 2 and self.lost:
            raise NVMLError_GpuIsLost("GPU is lost")
        return f"h{i}"

    def nvmlDeviceGetName(self, h: str) -> str:
        return "NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetUUID(self, h: str) -> str:
        return f"GPU-{h}"

    def nvmlDeviceGetMemoryInfo(self, h: str) -> SimpleNamespace:
        if h == "h2" and self.lost:
            raise NVMLError_GpuIsLost("GPU is lost")
        return SimpleNamespace(used=10 << 30, total=80 << 30)

    def nvmlDeviceGetMigMode(self, h: str) -> tuple[int, int]:
        if h == "h0":
            raise NVMLError_NotSupported("no MIG")
        return (1, 1) if h == "h1" else (0, 0)

    def nvmlDeviceGetUtilizationRates(self, h: str) -> SimpleNamespace:
        return SimpleNamespace(gpu=97, memory=40)

    def nvmlDeviceGetMaxMigDeviceCount(self, h: str) -> int:
        return 2

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: str, k: int) -> str:
        if k == 1:
            raise NVMLError("not found")
        return f"{h}-mig{k}"

    def nvmlDeviceGetComputeRunningProcesses(self, h: str) -> list[SimpleNamespace]:
        if h in ("h0", "h1-mig0"):
            return [
                SimpleNamespace(pid=self.our_pid, usedGpuMemory=4 << 30),
                SimpleNamespace(pid=1, usedGpuMemory=None),
            ]
        return []

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: str) -> list[SimpleNamespace]:
        return []


@pytest.fixture
def child() -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(30)"],
        env={**os.environ, "RL_CONSOLE_RUN": "run-1"},
        stdout=subprocess.PIPE,
    )
    # until the child has exec'd, /proc/<pid>/environ is still the parent's (a loaded machine shows it)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    yield proc
    proc.kill()
    proc.wait()
    proc.stdout.close()


def test_devices_mig_lost_and_our_processes(child: subprocess.Popen[bytes]) -> None:
    fake = FakeNvml(child.pid)
    sampler = GpuSampler(run_pids_fn=lambda: run_process_tree([os.getpid()]), nvml=fake)
    snap = sampler.sample()
    assert snap.available and snap.driver == "550.54"
    d0, d1, d2 = snap.devices
    assert (d0.mem_used, d0.mem_total, d0.util, d0.mig) == (10 << 30, 80 << 30, 97, False)
    assert [(p.pid, p.ours) for p in d0.procs] == [(child.pid, True), (1, False)]
    assert d0.ours_mem == 4 << 30 and d0.procs[1].mem is None
    assert d1.mig and d1.util is None and len(d1.instances) == 1
    assert d1.instances[0]["uuid"] == "GPU-h1-mig0" and d1.procs[0].ours
    assert not d2.lost
    fake.lost = True
    d2 = sampler.sample().devices[2]
    assert d2.lost and d2.error == "GPU is lost"
    json.dumps(snap.to_event_data())  # serialisable as an event


def test_process_tree_and_marker(child: subprocess.Popen[bytes]) -> None:
    assert child.pid in run_process_tree([os.getpid()])
    assert child.pid not in run_process_tree([999_999_999])
    assert has_marker(child.pid, "RL_CONSOLE_RUN=run-1")
    assert not has_marker(child.pid, "RL_CONSOLE_RUN=other")
    assert child.pid in run_process_tree([], marker_env="RL_CONSOLE_RUN=run-1", candidates=[child.pid, 1])


def test_host_sampler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    paths = default_disk_paths(tmp_path)
    assert paths == [str(tmp_path / "hf"), str(tmp_path / "hf" / "hub"), str(tmp_path), "/tmp"]
    snap = HostSampler(paths).sample()
    assert set(snap.disks) == {str(tmp_path), "/tmp"}  # only existing paths
    assert snap.disks[str(tmp_path)] > 0 and 0 <= snap.cpu <= 100
    assert 0 < snap.mem_used < snap.mem_total


def test_sampler_thread_publishes_gpu_state_once_and_host_every_tick(tmp_path: Path) -> None:
    events_path = tmp_path / "events.jsonl"
    bus = EventBus(events_path)
    seen: list[str] = []
    bus.subscribe(lambda e: seen.append(e.type))
    sampler = ResourceSampler(host=HostSampler([str(tmp_path)]))
    thread = SamplerThread(sampler, interval=0.05)
    thread.step = "l0"
    deadline = time.monotonic() + 10
    while sampler.samples < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert thread.stop()
    for ev in thread.drain():  # the supervisor's loop publishes what the thread sampled
        bus.publish(ev)
    sampler.close()
    bus.close()
    events, _ = read_events(events_path)
    kinds = [e.type for e in events]
    assert kinds.count("host") >= 4
    assert kinds.count("gpu") == 1  # "no NVIDIA driver" is said once, not every second
    assert events[-1].step == "l0" and seen == kinds  # the thread tags samples with the step set on it
