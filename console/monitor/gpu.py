"""GPU state through NVML, asked only through the tolerant ``console.monitor.nvml.Nvml``.

No library or driver: ``available=False`` with the reason; a GPU that fell off the bus: ``lost``;
MIG devices: instances of their parent, with their processes; a process list NVML cannot give says
why (``procs_status``). Processes count as the run's (``attribution``) ``by-pid`` when NVML's PIDs
are in the run's tree (``run_pids_fn``), else ``by-device`` while the run has processes (another PID
namespace, an old driver): those on the run's ``CUDA_VISIBLE_DEVICES``. A driver/library mismatch
is said once, in the first sample's ``notices``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from console.monitor.nvml import GPU_LOST, OK, Answer, DeviceIds, Nvml, text, visible_indexes
from console.monitor.procs import process_env, process_name

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
    procs_status: str = OK  # "ok", or why the process list is unknown ("not_supported", ...)
    attribution: str = "none"  # the snapshot's: how ``ours`` on the processes was decided

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
    attribution: str = "none"  # "by-pid", "by-device" or "none" (no run processes)
    notices: list[str] = field(default_factory=list)  # said once (e.g. a driver/library mismatch)

    def to_event_data(self) -> dict[str, Any]:
        return {
            "available": self.available,
            "reason": self.reason,
            "driver": self.driver,
            "attribution": self.attribution,
            "notices": list(self.notices),
            "devices": [asdict(d) for d in self.devices],
        }


class GpuSampler:
    """``sample()`` -> GpuSnapshot; NVML starts on first use. ``nvml`` replaces ``pynvml`` (tests without
    a GPU); ``cuda_visible`` is the run's ``CUDA_VISIBLE_DEVICES`` when known, else it is read from the
    run's processes, then from this process's environment (unset: every GPU)."""

    def __init__(
        self,
        run_pids_fn: Callable[[], set[int]] | None = None,
        nvml: Any = None,
        cuda_visible: str | None = None,
    ) -> None:
        self.run_pids_fn = run_pids_fn
        self.cuda_visible = cuda_visible
        self._nvml = Nvml(nvml)
        self._ready = False
        self._reason = ""
        self._next_try = 0.0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ init / shutdown
    def _init(self) -> bool:
        if self._ready:
            return True
        now = time.monotonic()
        if now < self._next_try:
            return False
        self._next_try = now + RETRY_INIT_S
        self._ready = self._nvml.start()
        self._reason = self._nvml.reason
        return self._ready

    def close(self) -> None:
        with self._lock:
            if self._ready:
                self._nvml.stop()
                self._ready = False

    # ------------------------------------------------------------------------ sampling
    def sample(self) -> GpuSnapshot:
        with self._lock:
            if not self._init():
                return GpuSnapshot(False, self._reason, t=time.time())
            count = self._nvml.query("nvmlDeviceGetCount")
            if not count.ok:
                self._ready = False  # driver went away: re-initialise later
                self._next_try = 0.0
                return GpuSnapshot(False, f"NVML stopped answering ({count.status})", t=time.time())
            ours = self._ours()
            devices = [self._device(i, ours) for i in range(int(count.value))]
            snap = GpuSnapshot(True, "", devices, self._nvml.driver, time.time())
            snap.attribution = self._attribute(devices, ours)
            snap.notices = self._nvml.take_notices()
            return snap

    def _attribute(self, devices: list[GpuDevice], ours: set[int]) -> str:
        """``by-pid`` when NVML lists one of the run's PIDs; else, while the run has processes,
        ``by-device``: the processes on the run's GPUs count as the run's (NVML PIDs from another
        PID namespace, or an old driver, match none of ours); ``none`` without run processes."""
        how = "none"
        if ours:
            how = "by-pid" if any(p.ours for d in devices for p in d.procs) else "by-device"
        if how == "by-device":
            ids = [
                DeviceIds(d.index, d.uuid, tuple(str(i.get("uuid")) for i in d.instances)) for d in devices
            ]
            run_set = set(visible_indexes(self._run_visible(ours), ids))
            for p in (p for d in devices if d.index in run_set for p in d.procs):
                p.ours = True
        for d in devices:
            d.attribution = how
        return how

    def _run_visible(self, ours: set[int]) -> str | None:
        if self.cuda_visible is not None:
            return self.cuda_visible
        for pid in sorted(ours)[:16]:
            value = process_env(pid, "CUDA_VISIBLE_DEVICES")
            if value is not None:
                return value
        return os.environ.get("CUDA_VISIBLE_DEVICES")

    def _ours(self) -> set[int]:
        if self.run_pids_fn is None:
            return set()
        try:
            return set(self.run_pids_fn())
        except Exception:  # noqa: BLE001 - a failing callback must not stop sampling
            return set()

    def _device(self, index: int, ours: set[int]) -> GpuDevice:
        q = self._nvml.query
        dev = GpuDevice(index=index)
        handle = q("nvmlDeviceGetHandleByIndex", index)
        if not handle.ok:
            dev.lost = handle.status == GPU_LOST
            dev.error = "GPU is lost" if dev.lost else f"no handle ({handle.status})"
            return dev
        h = handle.value
        fns = ("nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetMigMode")
        answers = [handle, *(q(f, h) for f in fns)]
        name, uuid, mem, mode = answers[1:]
        dev.name = text(name.value) or "?"
        dev.uuid = text(uuid.value) or "?"
        if mem.ok:
            dev.mem_used, dev.mem_total = int(mem.value.used), int(mem.value.total)
        enabled = getattr(self._nvml.lib, "NVML_DEVICE_MIG_ENABLE", 1)
        dev.mig = mode.ok and bool(mode.value) and mode.value[0] == enabled
        if dev.mig:
            dev.instances = self._mig_instances(h, ours, answers)
            dev.procs = [p for inst in dev.instances for p in inst["procs"]]
        else:
            util = q("nvmlDeviceGetUtilizationRates", h)
            answers.append(util)
            dev.util = int(util.value.gpu) if util.ok else None
            dev.procs, dev.procs_status = self._procs(h, ours, answers)
        if any(a.status == GPU_LOST for a in answers):
            dev.lost = True
            dev.error = "GPU is lost"
        return dev

    def _mig_instances(self, handle: Any, ours: set[int], answers: list[Answer]) -> list[dict[str, Any]]:
        q = self._nvml.query
        out: list[dict[str, Any]] = []
        n = q("nvmlDeviceGetMaxMigDeviceCount", handle)
        answers.append(n)
        for k in range(int(n.value or 0)):
            mh = q("nvmlDeviceGetMigDeviceHandleByIndex", handle, k)
            if not mh.ok:
                continue  # empty slot
            mem = q("nvmlDeviceGetMemoryInfo", mh.value)
            procs, status = self._procs(mh.value, ours, answers)
            out.append(
                {
                    "index": k,
                    "uuid": text(q("nvmlDeviceGetUUID", mh.value).value) or "?",
                    "mem_used": int(mem.value.used) if mem.ok else None,
                    "mem_total": int(mem.value.total) if mem.ok else None,
                    "procs": procs,
                    "procs_status": status,
                }
            )
        return out

    def _procs(self, handle: Any, ours: set[int], answers: list[Answer]) -> tuple[list[GpuProc], str]:
        """Compute and graphics processes merged per PID, and ``ok`` or why the list is unknown."""
        seen: dict[int, GpuProc] = {}
        statuses: list[str] = []
        for name in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            answer = self._nvml.query_versioned(name, handle)
            answers.append(answer)
            statuses.append(answer.status)
            for p in answer.value or []:
                pid = int(p.pid)
                mem = getattr(p, "usedGpuMemory", None)
                mem = int(mem) if mem is not None else None
                if pid in seen:  # a process doing compute and graphics: one entry
                    prev = seen[pid]
                    if mem is not None:
                        prev.mem = max(prev.mem or 0, mem)
                    continue
                seen[pid] = GpuProc(pid, process_name(pid), mem, pid in ours)
        status = OK if OK in statuses else statuses[0]
        return list(seen.values()), status
