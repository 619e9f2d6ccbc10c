"""GPU state through NVML (``import pynvml`` from the nvidia-ml-py package).

Every NVML call is tolerant: no library or no driver gives ``available=False`` with a reason;
a GPU that falls off the bus is marked ``lost`` instead of raising; MIG devices are listed as
instances of their parent, with their processes. Processes are matched to the run's process
tree (``run_pids_fn``) so a panel can tell this run's memory from other users'.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from console.monitor.procs import process_name

RETRY_INIT_S = 60.0


@dataclass(slots=True)
class GpuProc:
    pid: int
    name: str
    mem: int | None  # bytes; None when NVML cannot tell (e.g. some MIG/WSL setups)
    ours: bool = False


@dataclass(slots=True)
class GpuDevice:
    index: int
    name: str = "?"
    uuid: str = "?"
    mem_used: int | None = None
    mem_total: int | None = None
    util: int | None = None  # percent; None under MIG or when not supported
    mig: bool = False
    lost: bool = False
    procs: list[GpuProc] = field(default_factory=list)
    instances: list[dict[str, Any]] = field(default_factory=list)  # MIG instances
    error: str | None = None

    @property
    def ours_mem(self) -> int:
        return sum(p.mem or 0 for p in self.procs if p.ours)


@dataclass(slots=True)
class GpuSnapshot:
    available: bool
    reason: str = ""
    devices: list[GpuDevice] = field(default_factory=list)
    driver: str | None = None
    t: float = 0.0

    def to_event_data(self) -> dict[str, Any]:
        return {
            "available": self.available,
            "reason": self.reason,
            "driver": self.driver,
            "devices": [asdict(d) for d in self.devices],
        }


def _reason(nvml: Any, err: BaseException) -> str:
    names = {
        "NVMLError_LibraryNotFound": "no NVIDIA driver (libnvidia-ml not found)",
        "NVMLError_DriverNotLoaded": "no NVIDIA driver loaded",
        "NVMLError_NoPermission": "no permission to query the NVIDIA driver",
        "NVMLError_Uninitialized": "NVML not initialised",
    }
    for cls in type(err).__mro__:
        if cls.__name__ in names:
            return names[cls.__name__]
    return f"NVML unavailable: {err}"


class GpuSampler:
    """``sample()`` -> GpuSnapshot; cheap to construct, NVML is initialised on first use.

    ``nvml`` replaces the ``pynvml`` module (tests on machines without a GPU).
    """

    def __init__(self, run_pids_fn: Callable[[], set[int]] | None = None, nvml: Any = None) -> None:
        self.run_pids_fn = run_pids_fn
        self._nvml = nvml
        self._ready = False
        self._reason = ""
        self._next_try = 0.0
        self._driver: str | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ init / shutdown
    def _init(self) -> bool:
        if self._ready:
            return True
        now = time.monotonic()
        if now < self._next_try:
            return False
        self._next_try = now + RETRY_INIT_S
        if self._nvml is None:
            try:
                import pynvml
            except ImportError:
                self._reason = "nvidia-ml-py is not installed"
                return False
            self._nvml = pynvml
        try:
            self._nvml.nvmlInit()
        except Exception as e:  # noqa: BLE001 - NVMLError subclasses, OSError from ctypes
            self._reason = _reason(self._nvml, e)
            return False
        self._ready = True
        self._reason = ""
        drv = self._call(self._nvml.nvmlSystemGetDriverVersion)
        self._driver = drv.decode() if isinstance(drv, bytes) else drv
        return True

    def close(self) -> None:
        with self._lock:
            if self._ready:
                self._call(self._nvml.nvmlShutdown)
                self._ready = False

    # ------------------------------------------------------------------------ sampling
    def sample(self) -> GpuSnapshot:
        with self._lock:
            if not self._init():
                return GpuSnapshot(False, self._reason, t=time.time())
            nvml = self._nvml
            count = self._call(nvml.nvmlDeviceGetCount)
            if count is None:
                self._ready = False  # driver went away: re-initialise later
                self._next_try = 0.0
                return GpuSnapshot(False, "NVML stopped answering", t=time.time())
            ours = self._ours()
            devices = [self._device(i, ours) for i in range(count)]
            return GpuSnapshot(True, "", devices, self._driver, time.time())

    def _ours(self) -> set[int]:
        if self.run_pids_fn is None:
            return set()
        try:
            return set(self.run_pids_fn())
        except Exception:  # noqa: BLE001 - a failing callback must not stop sampling
            return set()

    def _call(self, fn: Callable[..., Any], *args: Any, lost: list[bool] | None = None) -> Any:
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - any NVMLError: not supported, lost, timeout...
            if lost is not None and type(e).__name__ in ("NVMLError_GpuIsLost", "NVMLError_Unknown"):
                lost[0] = True
            return None

    def _device(self, index: int, ours: set[int]) -> GpuDevice:
        nvml = self._nvml
        lost = [False]
        dev = GpuDevice(index=index)
        handle = self._call(nvml.nvmlDeviceGetHandleByIndex, index, lost=lost)
        if handle is None:
            dev.lost = lost[0]
            dev.error = "GPU is lost" if lost[0] else "no handle"
            return dev
        name = self._call(nvml.nvmlDeviceGetName, handle, lost=lost)
        dev.name = _text(name) or "?"
        dev.uuid = _text(self._call(nvml.nvmlDeviceGetUUID, handle, lost=lost)) or "?"
        mem = self._call(nvml.nvmlDeviceGetMemoryInfo, handle, lost=lost)
        if mem is not None:
            dev.mem_used, dev.mem_total = int(mem.used), int(mem.total)
        mode = self._call(nvml.nvmlDeviceGetMigMode, handle, lost=lost)
        enabled = getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1)
        dev.mig = bool(mode) and mode[0] == enabled
        if dev.mig:
            dev.instances = self._mig_instances(handle, ours, lost)
            dev.procs = [p for inst in dev.instances for p in inst["procs"]]
        else:
            util = self._call(nvml.nvmlDeviceGetUtilizationRates, handle, lost=lost)
            dev.util = int(util.gpu) if util is not None else None
            dev.procs = self._procs(handle, ours, lost)
        if lost[0]:
            dev.lost = True
            dev.error = "GPU is lost"
        return dev

    def _mig_instances(self, handle: Any, ours: set[int], lost: list[bool]) -> list[dict[str, Any]]:
        nvml = self._nvml
        out: list[dict[str, Any]] = []
        n = self._call(nvml.nvmlDeviceGetMaxMigDeviceCount, handle, lost=lost) or 0
        for k in range(n):
            mh = self._call(nvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, k)
            if mh is None:
                continue  # empty slot
            mem = self._call(nvml.nvmlDeviceGetMemoryInfo, mh)
            procs = self._procs(mh, ours, lost)
            out.append(
                {
                    "index": k,
                    "uuid": _text(self._call(nvml.nvmlDeviceGetUUID, mh)) or "?",
                    "mem_used": int(mem.used) if mem is not None else None,
                    "mem_total": int(mem.total) if mem is not None else None,
                    "procs": procs,
                }
            )
        return out

    def _procs(self, handle: Any, ours: set[int], lost: list[bool]) -> list[GpuProc]:
        nvml = self._nvml
        seen: dict[int, GpuProc] = {}
        for fn_name in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            fn = getattr(nvml, fn_name, None)
            if fn is None:
                continue
            for p in self._call(fn, handle, lost=lost) or []:
                pid = int(p.pid)
                mem = getattr(p, "usedGpuMemory", None)
                if pid in seen:
                    continue
                seen[pid] = GpuProc(pid, process_name(pid), int(mem) if mem is not None else None, pid in ours)
        return list(seen.values())


def _text(v: Any) -> str | None:
    if v is None:
        return None
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)
