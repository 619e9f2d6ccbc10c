"""`visible_devices` (ROCm/HIP variables next to CUDA's) and `gpus` (NVML count and compute capability)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from console.doctor.context import DoctorContext
from console.doctor.model import Check
from console.doctor.result import finding, make_remedy
from console.monitor.nvml import DeviceIds, Nvml, text, visible_indexes

VISIBLE_ID = "visible_devices"
GPUS_ID = "gpus"
ROCM_NAMES = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


def check_visible_devices(ctx: DoctorContext) -> Check:
    """ROCm/HIP variables next to CUDA's, graded per framework (doctor.toml says which code raises what)."""
    rocm = [n for n in ROCM_NAMES if ctx.env.get(n) is not None]
    cuda = ctx.env.get("CUDA_VISIBLE_DEVICES")
    cuda_text = f"CUDA_VISIBLE_DEVICES={cuda!r}" if cuda is not None else "CUDA_VISIBLE_DEVICES unset"
    if not rocm:
        return finding(VISIBLE_ID, "ok", f"{cuda_text}; no ROCR_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES")
    shown = ", ".join(f"{n}={ctx.env[n]!r}" for n in rocm)
    evidence = f"{shown}; {cuda_text}"
    hip = ctx.env.get("HIP_VISIBLE_DEVICES")
    if ctx.framework == "verl":
        case = "verl_rocr" if "ROCR_VISIBLE_DEVICES" in rocm else "verl_hip"
        if case == "verl_hip" and hip and cuda and hip != cuda:
            case = "verl_hip_mismatch"
    elif ctx.framework == "nemo-rl":
        case = "nemo_rl_rocm"
    elif cuda is not None:
        case, evidence = "conflict", f"{shown} together with CUDA_VISIBLE_DEVICES={cuda!r}"
    else:
        return finding(VISIBLE_ID, "ok", f"{evidence} (the demo starts no Ray GPU workers)")
    return finding(VISIBLE_ID, case, evidence, make_remedy(unset=rocm), names=" and ".join(rocm))


@dataclass
class Gpu:
    index: int
    name: str
    capability: tuple[int, int]
    uuid: str = ""  # "GPU-..." (CUDA_VISIBLE_DEVICES may name a GPU by it)
    mig_uuids: tuple[str, ...] = ()


@dataclass
class GpuReading:
    error: str | None = None  # "no NVIDIA driver: ..." when NVML cannot start
    gpus: list[Gpu] = field(default_factory=list)


def read_nvml() -> GpuReading:
    """GPUs through the monitor's tolerant NVML session (a lost GPU or MIG without access is
    listed as unreadable, never raised)."""
    nvml = Nvml()
    if not nvml.start():
        return GpuReading(error=nvml.reason)
    try:
        count = nvml.query("nvmlDeviceGetCount")
        gpus: list[Gpu] = []
        for index in range(int(count.value or 0)):
            handle = nvml.query("nvmlDeviceGetHandleByIndex", index)
            name = nvml.query("nvmlDeviceGetName", handle.value) if handle.ok else handle
            cap = nvml.query("nvmlDeviceGetCudaComputeCapability", handle.value) if handle.ok else handle
            uuid = nvml.query("nvmlDeviceGetUUID", handle.value) if handle.ok else handle
            if name.ok and cap.ok:
                gpus.append(
                    Gpu(
                        index,
                        text(name.value) or "?",
                        (int(cap.value[0]), int(cap.value[1])),
                        text(uuid.value) or "",
                        _mig_uuids(nvml, handle.value),
                    )
                )
            else:
                gpus.append(Gpu(index, f"unreadable ({(cap if name.ok else name).detail})", (0, 0)))
        return GpuReading(gpus=gpus)
    finally:
        nvml.stop()


def _mig_uuids(nvml: Nvml, handle: Any) -> tuple[str, ...]:
    out: list[str] = []
    for k in range(int(nvml.query("nvmlDeviceGetMaxMigDeviceCount", handle).value or 0)):
        mig = nvml.query("nvmlDeviceGetMigDeviceHandleByIndex", handle, k)
        uuid = text(nvml.query("nvmlDeviceGetUUID", mig.value).value) if mig.ok else None
        if uuid:
            out.append(uuid)
    return tuple(out)


def _visible(gpus: list[Gpu], cuda_visible: str | None) -> list[Gpu]:
    """The GPUs CUDA_VISIBLE_DEVICES names (indexes, GPU-/MIG- uuids or prefixes), CUDA's way."""
    by_index = {g.index: g for g in gpus}
    ids = [DeviceIds(g.index, g.uuid, g.mig_uuids) for g in gpus]
    return [by_index[i] for i in visible_indexes(cuda_visible, ids)]


def check_gpus(ctx: DoctorContext) -> Check:
    reading = (ctx.probes.gpus or read_nvml)()
    need = ctx.gpus_needed
    if reading.error:
        case = "no_driver_needed" if need > 0 else "no_driver"
        return finding(GPUS_ID, case, f"{reading.error}; the plan needs {need} GPU(s)", need=need)
    visible = _visible(reading.gpus, ctx.env.get("CUDA_VISIBLE_DEVICES"))
    caps = sorted({f"{g.capability[0]}.{g.capability[1]}" for g in visible})
    names = sorted({g.name for g in visible})
    evidence = (
        f"{len(visible)} visible of {len(reading.gpus)} ({', '.join(names) or 'none'}; "
        f"compute capability {', '.join(caps) or '-'}); the plan needs {need}"
    )
    if len(visible) < need:
        return finding(GPUS_ID, "too_few", evidence, need=need, have=len(visible))
    gen_levels = ctx.catalog["gpus"]["megatron_generation_levels"].get(ctx.framework, [])
    blackwell = [g for g in visible if g.capability[0] >= int(ctx.catalog["gpus"]["blackwell_major"])]
    if blackwell and any(level in gen_levels for level in ctx.spec.levels):
        cc = f"{blackwell[0].capability[0]}.{blackwell[0].capability[1]}"
        return finding(GPUS_ID, "blackwell", evidence, cc=cc)
    return finding(GPUS_ID, "ok", evidence)


def cuda_arch_list(ctx: DoctorContext) -> str:
    """TORCH_CUDA_ARCH_LIST for the node's GPUs, or the catalog's default when none are readable."""
    reading = (ctx.probes.gpus or read_nvml)()
    caps = sorted({f"{g.capability[0]}.{g.capability[1]}" for g in reading.gpus if g.capability[0]})
    return " ".join(caps) if caps else str(ctx.catalog["remedies"]["torch_cuda_arch_list"])
