"""GPU memory per node of a running Slurm job.

Two sources, tried in this order:
1. Ray's Prometheus metrics on each node (what NeMo-RL's GPU monitor reads; ray.sub starts Ray with
   ``--metrics-export-port``, 1309 by default): ``ray_node_gram_used`` (MiB), ``ray_node_gpus_utilization``.
2. ``srun --overlap --jobid=J`` running ``nvidia-smi --query-gpu=...`` once per node, where the site
   allows overlapping steps.
A source that fails twice in a row is dropped; the follower carries on without GPU samples.
"""

from __future__ import annotations

import re
import sys
import time
import urllib.request
from collections.abc import Sequence
from typing import Any

from console.events import Event
from console.runs.slurm import scheduler
from console.spec import RunSpec

NVIDIA_SMI_QUERY = ["nvidia-smi", "--query-gpu=index,name,uuid,memory.used,memory.total,utilization.gpu",
                    "--format=csv,noheader,nounits"]
RAY_METRICS_PORT = 1309
_PROM_RE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)")
_LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _num(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


def parse_nvidia_smi_csv(text: str) -> list[dict[str, Any]]:
    """``index, name, uuid, memory.used, memory.total, utilization.gpu`` (MiB, %) -> device dicts
    in the ``gpu`` event shape (memory in bytes)."""
    devices = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 6 or not fields[0].isdigit():
            continue
        used, total, util = _num(fields[3]), _num(fields[4]), _num(fields[5])
        devices.append({"index": int(fields[0]), "name": fields[1], "uuid": fields[2],
                        "mem_used": int(used * 2**20) if used is not None else None,
                        "mem_total": int(total * 2**20) if total is not None else None,
                        "util": util, "procs": []})
    return devices


def parse_srun_label_output(text: str, nodes: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """``srun --label`` output (``<task>: <line>``, one task per node) -> {node: devices}."""
    by_task: dict[int, list[str]] = {}
    for line in text.splitlines():
        task, sep, rest = line.partition(":")
        if sep and task.strip().isdigit():
            by_task.setdefault(int(task.strip()), []).append(rest.strip())
    out = {}
    for task, lines in sorted(by_task.items()):
        node = nodes[task] if task < len(nodes) else f"task{task}"
        out[node] = parse_nvidia_smi_csv("\n".join(lines))
    return out


def parse_ray_prometheus(text: str) -> dict[str, list[dict[str, Any]]]:
    """Ray's ``/metrics`` text -> {node ip: devices}: ``ray_node_gram_used`` is MiB (NeMo-RL divides
    by 1024 for GiB), ``ray_node_gram_available`` MiB, ``ray_node_gpus_utilization`` percent."""
    nodes: dict[str, dict[int, dict[str, Any]]] = {}
    for line in text.splitlines():
        if not line.startswith("ray_node_g"):
            continue
        m = _PROM_RE.match(line)
        if not m:
            continue
        name, labels_text, value = m.group(1), m.group(3) or "", _num(m.group(4))
        if value is None or name not in ("ray_node_gram_used", "ray_node_gram_available",
                                         "ray_node_gpus_utilization"):
            continue
        labels = dict(_LABEL_RE.findall(labels_text))
        if "GpuIndex" not in labels or not labels["GpuIndex"].isdigit():
            continue
        ip = labels.get("ip") or labels.get("NodeAddress") or "?"
        dev = nodes.setdefault(ip, {}).setdefault(int(labels["GpuIndex"]), {
            "index": int(labels["GpuIndex"]), "name": labels.get("GpuDeviceName"), "uuid": None,
            "mem_used": None, "mem_total": None, "util": None, "procs": []})
        if name == "ray_node_gram_used":
            dev["mem_used"] = int(value * 2**20)
        elif name == "ray_node_gram_available":
            dev["_avail"] = int(value * 2**20)
        else:
            dev["util"] = value
    out = {}
    for ip, devs in nodes.items():
        rows = []
        for _, dev in sorted(devs.items()):
            avail = dev.pop("_avail", None)
            if avail is not None and dev["mem_used"] is not None:
                dev["mem_total"] = dev["mem_used"] + avail
            rows.append(dev)
        out[ip] = rows
    return out


class GpuSampler:
    def __init__(self, interval_s: float = 30.0, query: Sequence[str] = NVIDIA_SMI_QUERY,
                 ray_port: int | None = RAY_METRICS_PORT) -> None:
        self.interval_s = interval_s
        self.query = list(query)
        self.ray_port = ray_port
        self.last = 0.0
        self.failures = {"ray": 0, "srun": 0}

    @classmethod
    def from_spec(cls, spec: RunSpec) -> GpuSampler | None:
        extra = spec.extra or {}
        if extra.get("slurm_gpu_sampling") is False:
            return None
        query = extra.get("slurm_gpu_query") or NVIDIA_SMI_QUERY
        port = extra.get("slurm_ray_metrics_port", RAY_METRICS_PORT)
        return cls(interval_s=float(extra.get("slurm_gpu_interval_s", 30.0)), query=query,
                   ray_port=int(port) if port else None)

    def _dead(self, source: str) -> bool:
        return self.failures[source] >= 2

    def _from_ray(self, nodes: Sequence[str]) -> dict[str, list[dict[str, Any]]] | None:
        if self.ray_port is None or self._dead("ray"):
            return None
        out: dict[str, list[dict[str, Any]]] = {}
        for node in nodes:
            try:
                with urllib.request.urlopen(f"http://{node}:{self.ray_port}/metrics", timeout=3) as resp:
                    text = resp.read(8 << 20).decode("utf-8", "replace")
            except (OSError, ValueError):
                continue
            for devs in parse_ray_prometheus(text).values():
                out.setdefault(node, []).extend(devs)
        if not out:
            self.failures["ray"] += 1
            return None
        self.failures["ray"] = 0
        return out

    def _from_srun(self, job_id: str, nodes: Sequence[str], num_nodes: int) -> dict[str, list[dict[str, Any]]] | None:
        if self._dead("srun"):
            return None
        try:
            proc = scheduler.srun_overlap(job_id, num_nodes, self.query)
        except scheduler.SlurmError as exc:
            print(f"rl-console follow: gpu sampling: {exc}", file=sys.stderr, flush=True)
            self.failures["srun"] += 1
            return None
        result = parse_srun_label_output(proc.stdout, nodes)
        if proc.returncode != 0 or not any(result.values()):
            self.failures["srun"] += 1
            first = (proc.stderr or proc.stdout).strip().splitlines()[:1]
            print(f"rl-console follow: gpu sampling via srun failed ({proc.returncode}): {first}",
                  file=sys.stderr, flush=True)
            return None
        self.failures["srun"] = 0
        return result

    def maybe_sample(self, job_id: str, num_nodes: int, nodes: Sequence[str] = ()) -> list[Event]:
        now = time.monotonic()
        if self.last and now - self.last < self.interval_s:
            return []
        self.last = now
        nodes = list(nodes)
        per_node = self._from_ray(nodes) if nodes else None
        source = "ray"
        if per_node is None:
            per_node = self._from_srun(job_id, nodes, num_nodes)
            source = "srun"
        if not per_node:
            return []
        return [Event("gpu", None, {"node": node, "devices": devs, "source": source})
                for node, devs in per_node.items()]
