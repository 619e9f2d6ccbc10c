"""`stale_ray`: is a Ray cluster already running on this node? Found without `ray status`:
GCS/raylet processes (psutil) and Ray's current-cluster file."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from console.doctor.context import DoctorContext
from console.doctor.model import Check
from console.doctor.result import finding, make_remedy

CHECK_ID = "stale_ray"
RAY_PROCESS_NAMES = ("gcs_server", "raylet")


@dataclass
class RayCluster:
    running: bool
    address: str | None  # what ray.init(address=...) should get, None: start a throw-away one
    pids: list[int] = field(default_factory=list)
    evidence: str = ""


def ray_processes() -> list[tuple[int, str]]:
    import psutil

    procs = psutil.process_iter(["pid", "name"])
    return [(p.info["pid"], p.info["name"]) for p in procs if p.info.get("name") in RAY_PROCESS_NAMES]


def detect_cluster(ctx: DoctorContext) -> RayCluster:
    lister = ctx.probes.processes or ray_processes
    procs = [(pid, name) for pid, name in lister() if name in RAY_PROCESS_NAMES]
    names = ", ".join(f"{name} (pid {pid})" for pid, name in procs[:6])
    pids = [p for p, _ in procs]
    explicit = ctx.env.get("RAY_ADDRESS")
    if explicit:
        no_procs = "no gcs_server/raylet process on this node"
        return RayCluster(True, explicit, pids, f"RAY_ADDRESS={explicit}; " + (names or no_procs))
    if not procs:
        return RayCluster(False, None, [], "no gcs_server/raylet process on this node")
    marker = Path(ctx.env.get("RAY_TMPDIR") or "/tmp") / "ray" / "ray_current_cluster"
    try:
        bootstrap = marker.read_text().strip() if marker.is_file() else ""
    except OSError:
        bootstrap = ""
    stopper = ctx.step_running("ray", "stop")
    if stopper:  # the run starts from `ray stop --force`: its workers will not live on this cluster
        return RayCluster(True, None, pids, f"{names}; the plan's step {stopper} stops it")
    if bootstrap:
        return RayCluster(True, "auto", pids, f"{names}; {marker}: {bootstrap}")
    return RayCluster(True, None, pids, f"{names}; no {marker} (a driver's own local cluster)")


def check_stale_ray(ctx: DoctorContext) -> Check:
    cluster = detect_cluster(ctx)
    if not cluster.pids:
        return finding(CHECK_ID, "ok", cluster.evidence)
    if ctx.step_running("ray", "stop") and not ctx.env.get("RAY_ADDRESS"):
        return finding(CHECK_ID, "ok", cluster.evidence)
    return finding(CHECK_ID, "running", cluster.evidence, make_remedy(commands=[["ray", "stop", "--force"]]))
