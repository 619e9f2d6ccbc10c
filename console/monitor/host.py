"""Host load: CPU, RAM, and free disk where runs write (HF cache, run folder, /tmp)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import psutil


def default_disk_paths(run_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """HF_HOME, HF_HUB_CACHE (or their defaults), the run folder and /tmp, without duplicates."""
    hf_home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    hub = os.environ.get("HF_HUB_CACHE") or os.path.join(hf_home, "hub")
    run = [os.fspath(run_dir)] if run_dir is not None else []
    return list(dict.fromkeys([hf_home, hub, *run, "/tmp"]))


@dataclass(slots=True)
class HostSnapshot:
    cpu: float
    mem_used: int
    mem_total: int
    disks: dict[str, int] = field(default_factory=dict)  # existing path -> free bytes
    disks_total: dict[str, int] = field(default_factory=dict)
    load1: float | None = None
    t: float = 0.0

    def to_event_data(self) -> dict[str, Any]:
        data = asdict(self)
        del data["t"]  # the event's own time
        return data


class HostSampler:
    """``sample()`` -> HostSnapshot. CPU percent is measured since the previous sample."""

    def __init__(self, paths: Iterable[str | os.PathLike[str]] | None = None) -> None:
        self.paths = [os.fspath(p) for p in (paths if paths is not None else default_disk_paths())]
        self._primed = False
        self._lock = threading.Lock()

    def sample(self) -> HostSnapshot:
        with self._lock:
            if not self._primed:
                psutil.cpu_percent(interval=None)
                self._primed = True
                time.sleep(0.05)
            cpu = psutil.cpu_percent(interval=None)
        vm = psutil.virtual_memory()
        disks: dict[str, int] = {}
        totals: dict[str, int] = {}
        for p in self.paths:
            try:
                du = shutil.disk_usage(p)
            except OSError:  # not there (yet)
                continue
            disks[p] = du.free
            totals[p] = du.total
        try:
            load1: float | None = os.getloadavg()[0]
        except OSError:
            load1 = None
        return HostSnapshot(
            cpu=cpu,
            mem_used=int(vm.total - vm.available),
            mem_total=int(vm.total),
            disks=disks,
            disks_total=totals,
            load1=load1,
            t=time.time(),
        )
