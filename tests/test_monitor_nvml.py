"""The tolerant NVML layer against a stand-in module (no GPU can exist here) that raises the real
exception classes of nvidia-ml-py's ``pynvml``; process matching uses a real child process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest

from console.monitor.gpu import GpuSampler
from console.monitor.nvml import (
    GPU_LOST,
    NO_FUNCTION,
    NO_PERMISSION,
    NOT_SUPPORTED,
    OK,
    DeviceIds,
    Nvml,
    init_reason,
    visible_indexes,
)
from console.monitor.procs import run_process_tree

pytestmark = pytest.mark.timeout(60)

UUID0 = "GPU-8e3a1f52-0c1b-4d7e-9a55-1c2d3e4f5a6b"
UUID1 = "GPU-8e3a9b00-7777-4d7e-9a55-000000000001"
MIG1 = "MIG-1f2e3d4c-5b6a-5978-8695-a4b3c2d1e0f9"


class Driver:
    """A pynvml-shaped module for a 2-GPU node with an old driver (only ``_v2`` process APIs)."""

    NVML_DEVICE_MIG_ENABLE = 1
    __version__ = "13.615.71"

    def __init__(
        self,
        procs: dict[int, list[SimpleNamespace]],
        graphics: dict[int, list[SimpleNamespace]],
        versions: tuple[str, ...] = ("_v2",),
    ) -> None:
        self.procs, self.graphics = procs, graphics
        self.calls: list[str] = []
        self.fail: dict[str, type[Exception]] = {}
        for kind, table in (("Compute", procs), ("Graphics", graphics)):
            base = f"nvmlDeviceGet{kind}RunningProcesses"
            for suffix in ("_v3", "_v2", ""):
                setattr(self, base + suffix, self._lister(base + suffix, table, suffix in versions))

    def _lister(self, name: str, table: dict[int, list[SimpleNamespace]], present: bool) -> Any:
        def call(h: int) -> list[SimpleNamespace]:
            self.calls.append(name)
            if not present:  # what pynvml raises when the driver lacks the symbol
                raise pynvml.NVMLError_FunctionNotFound()
            if name in self.fail:
                raise self.fail[name]()
            return list(table.get(h, []))

        return call

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...

    def nvmlSystemGetDriverVersion(self) -> str:
        return "470.82"

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return b"NVIDIA A100-SXM4-80GB"

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return (UUID0, UUID1)[h]

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(used=3 << 30, total=80 << 30)

    def nvmlDeviceGetMigMode(self, h: int) -> tuple[int, int]:
        raise pynvml.NVMLError_NotSupported()

    def nvmlDeviceGetUtilizationRates(self, h: int) -> SimpleNamespace:
        if h == 1:
            raise pynvml.NVMLError_NoPermission()
        return SimpleNamespace(gpu=55, memory=10)


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"],
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "GPU-8e3a9"},
    )
    yield proc
    proc.kill()
    proc.wait()


def test_statuses_are_told_apart_from_values() -> None:
    lib = SimpleNamespace(
        a=lambda: [],
        b=lambda: (_ for _ in ()).throw(pynvml.NVMLError_NotSupported()),
        c=lambda: (_ for _ in ()).throw(pynvml.NVMLError_NoPermission()),
        d=lambda: (_ for _ in ()).throw(pynvml.NVMLError_GpuIsLost()),
        e=lambda: (_ for _ in ()).throw(pynvml.NVMLError_FunctionNotFound()),
        f=lambda: (_ for _ in ()).throw(pynvml.NVMLLibraryMismatchError("unversioned")),
        g=lambda: (_ for _ in ()).throw(pynvml.NVMLError_Timeout()),
    )
    n = Nvml(lib)
    got = {k: n.query(k).status for k in "abcdefgz"}
    assert got == {
        "a": OK,
        "b": NOT_SUPPORTED,
        "c": NO_PERMISSION,
        "d": GPU_LOST,
        "e": NO_FUNCTION,
        "f": NO_FUNCTION,
        "g": "error",
        "z": NO_FUNCTION,
    }
    assert n.query("a").value == [] and n.query("a").ok
    # a function the driver lacks is said once; a name absent from the Python module is not a mismatch
    n.query("e")
    assert [m.split(" is missing")[0] for m in n.take_notices()] == ["NVML function e", "NVML function f"]
    assert n.take_notices() == []
    assert init_reason(pynvml.NVMLError_LibRmVersionMismatch()).startswith(
        "NVIDIA driver/library version mismatch"
    )
    assert init_reason(pynvml.NVMLError_LibraryNotFound()).startswith("no NVIDIA driver")


def test_versioned_process_apis_fall_back_and_merge_per_pid(child: subprocess.Popen[bytes]) -> None:
    me = child.pid
    drv = Driver(
        {0: [SimpleNamespace(pid=me, usedGpuMemory=2 << 30), SimpleNamespace(pid=1, usedGpuMemory=None)]},
        {0: [SimpleNamespace(pid=me, usedGpuMemory=None)]},
    )
    sampler = GpuSampler(run_pids_fn=lambda: run_process_tree([me]), nvml=drv)
    snap = sampler.sample()
    d0, d1 = snap.devices
    assert snap.attribution == "by-pid" and d0.attribution == "by-pid"
    assert [(p.pid, p.mem, p.ours) for p in d0.procs] == [(me, 2 << 30, True), (1, None, False)]
    assert d0.util == 55 and d1.util is None and not d1.lost  # no permission is not a lost GPU
    assert drv.calls[:2] == [
        "nvmlDeviceGetComputeRunningProcesses_v3",
        "nvmlDeviceGetComputeRunningProcesses_v2",
    ]
    notices = snap.notices
    assert len(notices) == 2 and "470.82" in notices[0] and "ComputeRunningProcesses_v3" in notices[0]
    assert sampler.sample().notices == []  # said once, not per sample
    assert snap.to_event_data()["attribution"] == "by-pid"


def test_unknown_process_list_is_not_an_empty_one() -> None:
    drv = Driver({}, {}, versions=("_v3", "_v2", ""))
    for name in ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v3"):
        drv.fail[name] = pynvml.NVMLError_NotSupported
    snap = GpuSampler(nvml=drv).sample()
    assert [d.procs_status for d in snap.devices] == [NOT_SUPPORTED, NOT_SUPPORTED]
    assert snap.notices == [] and snap.attribution == "none"
    drv.fail.clear()
    assert [d.procs_status for d in GpuSampler(nvml=drv).sample().devices] == [OK, OK]
    drv.fail["nvmlDeviceGetComputeRunningProcesses_v3"] = pynvml.NVMLError_GpuIsLost
    lost = GpuSampler(nvml=drv).sample().devices[0]
    assert lost.lost and lost.error == "GPU is lost"


def test_by_device_when_no_nvml_pid_is_ours(child: subprocess.Popen[bytes]) -> None:
    """NVML lists host PIDs the run cannot see (PID namespace): the run's GPUs, read from its
    process's CUDA_VISIBLE_DEVICES (a uuid prefix), carry the attribution instead."""
    host_pid = 4_000_000  # beyond pid_max: no process here has it
    drv = Driver(
        {
            0: [SimpleNamespace(pid=host_pid + 1, usedGpuMemory=1 << 30)],
            1: [SimpleNamespace(pid=host_pid, usedGpuMemory=5 << 30)],
        },
        {},
    )
    snap = GpuSampler(run_pids_fn=lambda: run_process_tree([child.pid]), nvml=drv).sample()
    assert snap.attribution == "by-device"
    d0, d1 = snap.devices
    assert d1.ours_mem == 5 << 30 and d0.ours_mem == 0
    # told explicitly, the device set wins over the processes' environment
    snap = GpuSampler(run_pids_fn=lambda: {child.pid}, nvml=drv, cuda_visible="0,1").sample()
    assert [d.ours_mem for d in snap.devices] == [1 << 30, 5 << 30]
    assert GpuSampler(run_pids_fn=lambda: set(), nvml=drv).sample().attribution == "none"


def test_cuda_visible_devices_mapping() -> None:
    devs = [DeviceIds(0, UUID0), DeviceIds(1, UUID1, (MIG1,)), DeviceIds(2, "GPU-ffff0000-aaaa")]
    assert visible_indexes(None, devs) == [0, 1, 2]
    assert visible_indexes("", devs) == []
    assert visible_indexes("2,0", devs) == [2, 0]
    assert visible_indexes(f"{UUID1},{UUID0.upper()}", devs) == [1, 0]
    assert visible_indexes("GPU-ffff", devs) == [2]  # a unique prefix, as CUDA accepts
    assert visible_indexes("GPU-8e3a", devs) == []  # ambiguous: names nothing
    assert visible_indexes("GPU-8e3a1,GPU-8e3a9", devs) == [0, 1]
    assert visible_indexes(f"{MIG1[:12]}", devs) == [1]
    assert visible_indexes("1,7,0", devs) == [1]  # CUDA stops at the first invalid entry
    assert visible_indexes("0,-1,1", devs) == [0]
    assert visible_indexes("1,1", devs) == [1]
