"""One tolerant way to ask NVML (``pynvml`` from nvidia-ml-py) anything, for the monitor, doctor and plan.

``Nvml.query(name, *args)`` never raises: its ``Answer.status`` tells a value (``ok``) from "not
supported", "no permission", "GPU lost", "this driver lacks the function" and other errors, so a
failure never looks like an empty result. A function missing from the (older) driver is reported
once in ``notices``. ``query_versioned`` tries ``_v3``, ``_v2``, then the unversioned name.

``visible_indexes`` maps ``CUDA_VISIBLE_DEVICES`` (indexes, ``GPU-<uuid>`` or a unique prefix of it,
``MIG-<uuid>``) to NVML indexes as CUDA reads it: the list ends at the first entry naming no device.
"""

from __future__ import annotations

import importlib.metadata
import threading
from dataclasses import dataclass
from typing import Any

OK = "ok"
NOT_SUPPORTED = "not_supported"
NO_PERMISSION = "no_permission"
GPU_LOST = "gpu_lost"
NO_FUNCTION = "no_function"
ERROR = "error"

# pynvml's exception class names (checked along the MRO, so subclasses and fakes with the same
# names work) -> status
_STATUS_BY_ERROR = {
    "NVMLError_NotSupported": NOT_SUPPORTED,
    "NVMLError_NoPermission": NO_PERMISSION,
    "NVMLError_GpuIsLost": GPU_LOST,
    "NVMLError_Unknown": GPU_LOST,  # what a GPU that fell off the bus often answers
    "NVMLError_FunctionNotFound": NO_FUNCTION,
    "NVMLLibraryMismatchError": NO_FUNCTION,  # pynvml's unversioned wrappers on an old driver
}

_INIT_REASONS = {
    "NVMLError_LibraryNotFound": "no NVIDIA driver (libnvidia-ml not found)",
    "NVMLError_DriverNotLoaded": "no NVIDIA driver loaded",
    "NVMLError_NoPermission": "no permission to query the NVIDIA driver",
    "NVMLError_LibRmVersionMismatch": "NVIDIA driver/library version mismatch (reload the driver or reboot)",
    "NVMLError_Uninitialized": "NVML not initialised",
}


@dataclass(frozen=True, slots=True)
class Answer:
    value: Any = None
    status: str = OK
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == OK


def _by_class(err: BaseException, table: dict[str, str], default: str) -> str:
    """``table``'s entry for the first of ``err``'s classes (by name) it has."""
    return next((table[c.__name__] for c in type(err).__mro__ if c.__name__ in table), default)


def init_reason(err: BaseException) -> str:
    """Why ``nvmlInit`` failed, in one line."""
    return _by_class(err, _INIT_REASONS, f"NVML unavailable: {err}")


class Nvml:
    """A started (or failed) NVML session. ``module`` replaces ``pynvml`` (tests without a GPU)."""

    def __init__(self, module: Any = None) -> None:
        self.lib = module
        self.reason = ""
        self.driver: str | None = None
        self.notices: list[str] = []  # new notices since the caller last took them
        self._missing: set[str] = set()
        self._lock = threading.Lock()

    def start(self) -> bool:
        """Import and initialise; False with ``reason`` set when there is no usable NVML."""
        if self.lib is None:
            try:
                import pynvml
            except ImportError:
                self.reason = "nvidia-ml-py is not installed"
                return False
            self.lib = pynvml
        try:
            self.lib.nvmlInit()
        except Exception as e:  # noqa: BLE001 - NVMLError subclasses, OSError from ctypes
            self.reason = init_reason(e)
            return False
        self.reason = ""
        self.driver = text(self.query("nvmlSystemGetDriverVersion").value)
        return True

    def stop(self) -> None:
        self.query("nvmlShutdown")

    def take_notices(self) -> list[str]:
        with self._lock:
            out, self.notices = self.notices, []
        return out

    def query(self, name: str, *args: Any) -> Answer:
        fn = getattr(self.lib, name, None)
        if fn is None:
            return Answer(None, NO_FUNCTION, f"{name} is not in this nvidia-ml-py")
        try:
            return Answer(fn(*args))
        except Exception as e:  # noqa: BLE001 - every NVMLError becomes a status
            status = _by_class(e, _STATUS_BY_ERROR, ERROR)
            if status == NO_FUNCTION:
                self._note_missing(name)
            return Answer(None, status, f"{name}: {e}")

    def query_versioned(self, name: str, *args: Any) -> Answer:
        """``name_v3``, then ``name_v2``, then ``name``: the first the driver has."""
        for suffix in ("_v3", "_v2"):
            answer = self.query(name + suffix, *args)
            if answer.status != NO_FUNCTION:
                return answer
        return self.query(name, *args)

    def _note_missing(self, name: str) -> None:
        with self._lock:
            if name in self._missing:
                return
            self._missing.add(name)
            lib_version = getattr(self.lib, "__version__", None) or _package_version()
            self.notices.append(
                f"NVML function {name} is missing in driver {self.driver or '?'} "
                f"(nvidia-ml-py {lib_version} is newer than the driver): using an older one"
            )


def _package_version() -> str:
    try:
        return importlib.metadata.version("nvidia-ml-py")
    except importlib.metadata.PackageNotFoundError:
        return "?"


def text(v: Any) -> str | None:
    if v is None:
        return None
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


@dataclass(frozen=True, slots=True)
class DeviceIds:
    """What ``CUDA_VISIBLE_DEVICES`` may name for one NVML device."""

    index: int
    uuid: str  # "GPU-..."
    mig_uuids: tuple[str, ...] = ()


def visible_indexes(cuda_visible: str | None, devices: list[DeviceIds]) -> list[int]:
    """NVML indexes named by ``cuda_visible`` (None: all devices), in its order, without repeats."""
    if cuda_visible is None:
        return [d.index for d in devices]
    out: list[int] = []
    for raw in cuda_visible.split(","):
        index = _one(raw.strip(), devices)
        if index is None:
            break  # CUDA ignores everything from the first entry that names no device
        if index not in out:
            out.append(index)
    return out


def _one(entry: str, devices: list[DeviceIds]) -> int | None:
    if not entry:
        return None
    if entry.isdigit():
        return int(entry) if any(d.index == int(entry) for d in devices) else None
    low = entry.lower()
    if low.startswith("mig-"):
        hits = [d.index for d in devices for m in d.mig_uuids if m.lower().startswith(low)]
    elif low.startswith("gpu-") and len(low) > 4:
        hits = [d.index for d in devices if d.uuid.lower().startswith(low)]
    else:
        return None
    return hits[0] if len(set(hits)) == 1 else None  # an ambiguous prefix names nothing
