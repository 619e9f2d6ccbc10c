"""Prove the tolerant NVML path (``console.monitor.nvml`` + ``GpuSampler``) on a real NVIDIA GPU.

Needs only torch (CUDA build), nvidia-ml-py, psutil and the console package (no Textual).

1. Lists the GPUs (NVML index, UUID, MIG UUIDs) and which process-list API versions this driver
   answers (``_v3``/``_v2``/unversioned) with the status of each.
2. For ``CUDA_VISIBLE_DEVICES`` given as an index, as ``GPU-<uuid>``, as a unique uuid prefix (and
   as a ``MIG-<uuid>`` when the GPU has MIG instances): maps it to NVML indexes, starts a child that
   holds a known CUDA allocation under that setting, samples keyed to the child's process tree and
   prints where NVML saw the child, its memory and the attribution mode.
3. Hides the child's PID (a PID-namespace mismatch simulated by keying the sampler to a CPU-only
   decoy process whose environment names the same GPU): the sample must say ``by-device`` and
   count the child's memory as the run's.

Prints one table; exits 1 when a check fails.

Usage: python scripts/gpu_proof_nvml.py [--device N] [--mib 1024]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from console.monitor.gpu import GpuSampler, GpuSnapshot
from console.monitor.nvml import DeviceIds, Nvml, text, visible_indexes
from console.monitor.procs import run_process_tree

HOLDER = r"""
import sys, time, torch
x = torch.empty(int(sys.argv[1]) * (1 << 20), dtype=torch.uint8, device="cuda")
x.fill_(1); torch.cuda.synchronize()
print("allocated", torch.cuda.get_device_name(0), flush=True)
time.sleep(float(sys.argv[2]))
"""
DECOY = "import time; time.sleep(120)"


def _mib(n: int | None) -> str:
    return "?" if n is None else f"{n / (1 << 20):,.0f} MiB"


def devices(nvml: Nvml) -> list[DeviceIds]:
    out: list[DeviceIds] = []
    for i in range(int(nvml.query("nvmlDeviceGetCount").value or 0)):
        h = nvml.query("nvmlDeviceGetHandleByIndex", i)
        if not h.ok:
            out.append(DeviceIds(i, "?"))
            continue
        migs: list[str] = []
        for k in range(int(nvml.query("nvmlDeviceGetMaxMigDeviceCount", h.value).value or 0)):
            mh = nvml.query("nvmlDeviceGetMigDeviceHandleByIndex", h.value, k)
            if mh.ok:
                migs.append(text(nvml.query("nvmlDeviceGetUUID", mh.value).value) or "?")
        out.append(DeviceIds(i, text(nvml.query("nvmlDeviceGetUUID", h.value).value) or "?", tuple(migs)))
    return out


def unique_prefix(uuid: str, ids: list[DeviceIds]) -> str:
    for n in range(8, len(uuid) + 1):
        if sum(d.uuid.lower().startswith(uuid[:n].lower()) for d in ids) == 1:
            return uuid[:n]
    return uuid


def api_versions(nvml: Nvml, index: int) -> list[str]:
    h = nvml.query("nvmlDeviceGetHandleByIndex", index).value
    rows = []
    for base in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        for suffix in ("_v3", "_v2", ""):
            a = nvml.query(base + suffix, h)
            rows.append(f"  {base + suffix:<45} {a.status:<14} {len(a.value) if a.ok else '-'} process(es)")
        rows.append(f"  -> query_versioned answers: {nvml.query_versioned(base, h).status}")
    return rows


def hold(cvd: str, mib: int, seconds: float = 60.0) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(mib), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": cvd},
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line.startswith("allocated"):
        child.kill()
        raise SystemExit(f"the CUDA child did not start under CUDA_VISIBLE_DEVICES={cvd!r}")
    return child


def wait_seen(sampler: GpuSampler, pid: int, timeout: float = 10.0) -> GpuSnapshot:
    """NVML lists a new context after a moment: sample until the pid shows up (or time runs out)."""
    deadline = time.monotonic() + timeout
    notices: list[str] = []
    while True:
        snap = sampler.sample()
        notices += snap.notices
        if any(p.pid == pid for d in snap.devices for p in d.procs) or time.monotonic() > deadline:
            snap.notices = notices
            return snap
        time.sleep(0.2)


def seen_at(snap: GpuSnapshot, pid: int) -> tuple[list[int], int | None, bool]:
    where = [d.index for d in snap.devices if any(p.pid == pid for p in d.procs)]
    mem = next((p.mem for d in snap.devices for p in d.procs if p.pid == pid), None)
    ours = any(p.ours for d in snap.devices for p in d.procs if p.pid == pid)
    return where, mem, ours


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", type=int, default=0, help="NVML index of the GPU to use")
    ap.add_argument("--mib", type=int, default=1024, help="CUDA allocation of the child")
    args = ap.parse_args()
    nvml = Nvml()
    if not nvml.start():
        print(f"no NVML: {nvml.reason}")
        return 1
    ids = devices(nvml)
    print(f"driver {nvml.driver}; {len(ids)} GPU(s)")
    for d in ids:
        print(f"  NVML {d.index}: {d.uuid}" + (f" MIG {', '.join(d.mig_uuids)}" if d.mig_uuids else ""))
    print("process-list APIs on this driver:")
    print("\n".join(api_versions(nvml, args.device)))
    target = ids[args.device]
    forms = [
        ("index", str(target.index)),
        ("GPU-uuid", target.uuid),
        ("uuid prefix", unique_prefix(target.uuid, ids)),
    ]
    if target.mig_uuids:
        forms.append(("MIG-uuid", target.mig_uuids[0]))
    failures = 0
    notices: list[str] = []
    header = (
        f"{'CUDA_VISIBLE_DEVICES as':<24} {'value':<44} {'-> NVML':<8} {'child pid':>9} {'seen on':<8} "
        f"{'child mem':>10} {'ours':<5} {'attribution':<11} {'run mem':>10} check"
    )
    print("\n" + header + "\n" + "-" * len(header))
    for label, value in forms:
        mapped = visible_indexes(value, ids)
        child = hold(value, args.mib)
        try:
            sampler = GpuSampler(run_pids_fn=lambda c=child: run_process_tree([c.pid]))
            snap = wait_seen(sampler, child.pid)
            where, mem, ours = seen_at(snap, child.pid)
            run_mem = sum(d.ours_mem for d in snap.devices)
            notices += snap.notices
            good = (
                mapped == [target.index]
                and where == [target.index]
                and ours
                and snap.attribution == "by-pid"
                and (mem is None or mem >= args.mib << 20)
            )
            failures += not good
            print(
                f"{label:<24} {value:<44} {str(mapped):<8} {child.pid:>9} {str(where):<8} {_mib(mem):>10} "
                f"{str(ours):<5} {snap.attribution:<11} {_mib(run_mem):>10} {'ok' if good else 'FAIL'}"
            )
            sampler.close()
        finally:
            child.kill()
            child.wait()
    # the child's PID hidden from the sampler: a decoy on the CPU is "the run", its env names the GPU
    child = hold(str(target.index), args.mib)
    prefix = unique_prefix(target.uuid, ids)
    decoy = subprocess.Popen(
        [sys.executable, "-c", DECOY], env={**os.environ, "CUDA_VISIBLE_DEVICES": prefix}
    )
    try:
        for how, kwargs in (("decoy's env", {}), ("given", {"cuda_visible": str(target.index)})):
            sampler = GpuSampler(run_pids_fn=lambda: run_process_tree([decoy.pid]), **kwargs)
            snap = wait_seen(sampler, child.pid)
            where, mem, ours = seen_at(snap, child.pid)
            run_mem = sum(d.ours_mem for d in snap.devices)
            good = (
                snap.attribution == "by-device" and ours and where == [target.index] and run_mem >= (mem or 0)
            )
            failures += not good
            label = f"pid hidden ({how})"
            value = prefix if not kwargs else str(target.index)
            print(
                f"{label:<24} {value:<44} {str(visible_indexes(value, ids)):<8} {child.pid:>9} {str(where):<8} "
                f"{_mib(mem):>10} {str(ours):<5} {snap.attribution:<11} {_mib(run_mem):>10} "
                f"{'ok' if good else 'FAIL'}"
            )
            t0 = time.perf_counter()
            for _ in range(10):
                sampler.sample()
            cost = (time.perf_counter() - t0) * 100
            notices += snap.notices
            sampler.close()
    finally:
        for p in (child, decoy):
            p.kill()
            p.wait()
    print(
        f"\nGpuSampler.sample(): {cost:.1f} ms per sample; notices (each said once per sampler): {sorted(set(notices)) or 'none'}"
    )
    nvml.stop()
    print("all checks ok" if not failures else f"{failures} check(s) FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
