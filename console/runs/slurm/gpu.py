"""GPU memory and host load per node of a running Slurm job (remote nodes: this machine's NVML,
``console.monitor.gpu``, cannot see them).

Host (CPU, load, memory): one ``srun --overlap --jobid=J`` task per node runs a small probe
(``/proc/stat``, ``/proc/loadavg``, ``/proc/meminfo``, then the GPU query). GPUs, in this order:
1. Ray's Prometheus metrics on each node (what NeMo-RL's GPU monitor reads; ray.sub starts Ray with
   ``--metrics-export-port``, 1309 by default);
2. the probe's ``nvidia-smi --query-gpu=...``, where the site allows overlapping steps.
A source that fails twice in a row is dropped; the follower carries on without GPU samples.
"""

from __future__ import annotations

import re
import shlex
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from console.events import Event
from console.runs.slurm import scheduler
from console.spec import RunSpec

NVIDIA_SMI_QUERY = [
    "nvidia-smi",
    "--query-gpu=index,name,uuid,memory.used,memory.total,utilization.gpu",
    "--format=csv,noheader,nounits",
]
RAY_METRICS_PORT = 1309
# srun's words when the job is already over: not a sampling failure
JOB_OVER = (
    "has expired",
    "already completing or completed",
    "Invalid job id",
    "is not running",
    "Job/step already",
)
_PROM_RE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)")
_LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _num(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


def _bytes(mib: float | None) -> int | None:
    return int(mib * 2**20) if mib is not None else None


def _device(
    index: int,
    name: str | None,
    uuid: str | None,
    used_mib: float | None,
    total_mib: float | None,
    util: float | None,
) -> dict[str, Any]:
    """One device in the ``gpu`` event shape (memory in bytes)."""
    mem = {"mem_used": _bytes(used_mib), "mem_total": _bytes(total_mib)}
    return {"index": index, "name": name, "uuid": uuid, **mem, "util": util, "procs": []}


def parse_nvidia_smi_csv(text: str) -> list[dict[str, Any]]:
    """``index, name, uuid, memory.used, memory.total, utilization.gpu`` (MiB, %) -> device dicts."""
    devices = []
    for line in text.splitlines():
        f = [f.strip() for f in line.split(",")]
        if len(f) >= 6 and f[0].isdigit():
            devices.append(_device(int(f[0]), f[1], f[2], _num(f[3]), _num(f[4]), _num(f[5])))
    return devices


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
        if value is None or name not in (
            "ray_node_gram_used",
            "ray_node_gram_available",
            "ray_node_gpus_utilization",
        ):
            continue
        labels = dict(_LABEL_RE.findall(labels_text))
        if "GpuIndex" not in labels or not labels["GpuIndex"].isdigit():
            continue
        ip = labels.get("ip") or labels.get("NodeAddress") or "?"
        index = int(labels["GpuIndex"])
        devs = nodes.setdefault(ip, {})
        dev = devs.setdefault(index, _device(index, labels.get("GpuDeviceName"), None, None, None, None))
        if name == "ray_node_gram_used":
            dev["mem_used"] = _bytes(value)
        elif name == "ray_node_gram_available":
            dev["_avail"] = _bytes(value)
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


# One ``srun --overlap`` task per node runs this (fixed text; the GPU query is shlex-quoted into it):
# every output line is tagged, so the host part and the GPU part parse apart.
_PROBE = r"""echo "@node ${SLURMD_NODENAME:-$(hostname -s)}"
echo "@stat $(head -n 1 /proc/stat)"
echo "@load $(cut -d ' ' -f 1 /proc/loadavg)"
grep -E '^(MemTotal|MemAvailable):' /proc/meminfo | sed 's/^/@mem /'
if command -v %(prog)s >/dev/null 2>&1; then
  out=$(%(query)s 2>&1); rc=$?
  printf '%%s\n' "$out" | sed 's/^/@gpu /'
  echo "@gpurc $rc"
else
  echo "@nogpu %(prog)s not found"
fi
"""


def probe_argv(query: Sequence[str]) -> list[str]:
    """``sh -c <probe>``: node name, /proc/stat CPU line, load, memory, then ``query``'s output."""
    return ["sh", "-c", _PROBE % {"prog": shlex.quote(query[0]), "query": shlex.join(query)}]


@dataclass
class NodeProbe:
    """What the probe said about one node."""

    node: str
    cpu_ticks: tuple[int, int] | None = None  # (busy, total) jiffies since boot
    load1: float | None = None
    mem_total: int | None = None
    mem_available: int | None = None
    gpu_lines: list[str] = field(default_factory=list)
    gpu_rc: int | None = None
    no_gpu: str | None = None


def parse_probe(text: str, nodes: Sequence[str] = ()) -> dict[str, NodeProbe]:
    """``srun --label`` output of the probe -> {node: NodeProbe}. A task that printed no ``@node``
    line is named after ``nodes[task]``."""
    by_task: dict[int, NodeProbe] = {}
    for line in text.splitlines():
        task_txt, sep, rest = line.partition(":")
        if not sep or not task_txt.strip().isdigit():
            continue
        task = int(task_txt.strip())
        probe = by_task.setdefault(task, NodeProbe(node=nodes[task] if task < len(nodes) else f"task{task}"))
        tag, _, value = rest.strip().partition(" ")
        value = value.strip()
        if tag == "@node" and value:
            probe.node = value
        elif tag == "@stat":
            ticks = [int(x) for x in value.split()[1:] if x.isdigit()]
            if len(ticks) >= 4:
                idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
                probe.cpu_ticks = (sum(ticks[:8]) - idle, sum(ticks[:8]))
        elif tag == "@load":
            probe.load1 = _num(value)
        elif tag == "@mem":
            key, _, amount = value.partition(":")
            kib = _num(amount.replace("kB", ""))
            if kib is not None:
                if key == "MemTotal":
                    probe.mem_total = int(kib * 1024)
                elif key == "MemAvailable":
                    probe.mem_available = int(kib * 1024)
        elif tag == "@gpu":
            probe.gpu_lines.append(value)
        elif tag == "@gpurc":
            probe.gpu_rc = int(value) if value.lstrip("-").isdigit() else None
        elif tag == "@nogpu":
            probe.no_gpu = value
    return {p.node: p for p in by_task.values()}


class NodeSampler:
    """Per node of a running job, every ``interval_s``: a ``host`` event (CPU, load, memory) and a ``gpu``
    event (devices from Ray's metrics port when it answers, else the probe's nvidia-smi; or the reason
    there are none, once per node until it changes)."""

    def __init__(
        self,
        interval_s: float = 30.0,
        query: Sequence[str] = NVIDIA_SMI_QUERY,
        ray_port: int | None = RAY_METRICS_PORT,
        timeout_s: float = 15.0,
    ) -> None:
        self.interval_s = interval_s
        self.query = list(query)
        self.ray_port = ray_port
        self.timeout_s = timeout_s
        self.last = 0.0
        self.failures = {"ray": 0, "srun": 0}
        self._ticks: dict[str, tuple[int, int]] = {}
        self._gpu_said: dict[str, str] = {}
        self._addrs: dict[str, str] = {}  # node name -> NodeAddr (scontrol show node)
        self._addrs_asked = False
        self.step: str | None = None  # set by SamplerThread; the follower names the step itself
        self._target: tuple[str, int, tuple[str, ...]] | None = None

    @classmethod
    def from_spec(cls, spec: RunSpec) -> NodeSampler | None:
        extra = spec.extra or {}
        if extra.get("slurm_gpu_sampling") is False:
            return None
        query = extra.get("slurm_gpu_query") or NVIDIA_SMI_QUERY
        port = extra.get("slurm_ray_metrics_port", RAY_METRICS_PORT)
        return cls(
            interval_s=float(extra.get("slurm_gpu_interval_s", 30.0)),
            query=[str(q) for q in query],
            ray_port=int(port) if port else None,
        )

    def _dead(self, source: str) -> bool:
        return self.failures[source] >= 2

    def _from_ray(self, nodes: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        if self.ray_port is None or self._dead("ray"):
            return {}
        out: dict[str, list[dict[str, Any]]] = {}
        if not self._addrs_asked and any(n not in self._addrs for n in nodes):
            self._addrs_asked = True
            self._addrs.update(scheduler.node_addrs())
        for node in nodes:
            host = self._addrs.get(node, node)
            try:
                with urllib.request.urlopen(f"http://{host}:{self.ray_port}/metrics", timeout=3) as resp:
                    text = resp.read(8 << 20).decode("utf-8", "replace")
            except (OSError, ValueError):
                continue
            for devs in parse_ray_prometheus(text).values():
                out.setdefault(node, []).extend(devs)
        self.failures["ray"] = 0 if out else self.failures["ray"] + 1
        return out

    def _probe(
        self, job_id: str, nodes: Sequence[str], num_nodes: int
    ) -> tuple[dict[str, NodeProbe], str | None]:
        """(probes by node, why the probe failed or None)."""
        if self._dead("srun"):
            return {}, None
        try:
            proc = scheduler.srun_overlap(job_id, num_nodes, probe_argv(self.query), timeout=self.timeout_s)
        except scheduler.SlurmError as exc:
            self.failures["srun"] += 1
            return {}, str(exc)
        probes = parse_probe(proc.stdout, nodes)
        if not probes and any(m in proc.stderr for m in JOB_OVER):
            return {}, None  # the job ended between the follower's poll and this sample
        if not probes:
            self.failures["srun"] += 1
            first = (proc.stderr or proc.stdout).strip().splitlines()[:1]
            return {}, f"srun --overlap exited {proc.returncode}: {first[0] if first else 'no output'}"
        self.failures["srun"] = 0
        return probes, None

    def _host_event(self, probe: NodeProbe) -> Event | None:
        if probe.mem_total is None and probe.load1 is None:
            return None
        cpu = None
        if probe.cpu_ticks is not None:
            prev = self._ticks.get(probe.node)
            self._ticks[probe.node] = probe.cpu_ticks
            if prev is not None and probe.cpu_ticks[1] > prev[1]:
                cpu = round(100.0 * (probe.cpu_ticks[0] - prev[0]) / (probe.cpu_ticks[1] - prev[1]), 1)
        used = (
            (probe.mem_total - probe.mem_available)
            if probe.mem_total and probe.mem_available is not None
            else None
        )
        return Event(
            "host",
            None,
            {
                "node": probe.node,
                "cpu": cpu,
                "load1": probe.load1,
                "mem_used": used,
                "mem_total": probe.mem_total,
                "disks": {},
                "source": "srun",
            },
        )

    def _gpu_event(
        self,
        node: str,
        devices: list[dict[str, Any]] | None,
        reason: str | None,
        source: str,
        queried: list[str],
    ) -> Event | None:
        why = None
        if devices:
            self._gpu_said.pop(node, None)
        else:
            why = reason or "no GPU reported"
            if self._gpu_said.get(node) == why:
                return None
            self._gpu_said[node] = why
        data = {
            "node": node,
            "available": bool(devices),
            "reason": why,
            "devices": devices or [],
            "source": source,
            "queried": queried,
        }
        return Event("gpu", None, data)

    def aim(self, job_id: str | None, num_nodes: int = 1, nodes: Sequence[str] = ()) -> None:
        """Sample this job's nodes from now on (``job_id=None``: pause)."""
        self._target = (job_id, num_nodes, tuple(nodes)) if job_id else None

    def sample_once(self) -> list[Event]:
        """What ``console.runs.sampling.SamplerThread`` calls: a sample of the aimed job when one is
        due (``interval_s``), never an exception (a sampling failure must not end the follower)."""
        target, now = self._target, time.monotonic()
        if target is None or (self.last and now - self.last < self.interval_s):
            return []
        self.last = now
        try:
            return self.sample(*target)
        except Exception as exc:  # noqa: BLE001
            print(f"rl-console follow: node sampling failed: {exc!r}", file=sys.stderr, flush=True)
            return []

    def sample(self, job_id: str, num_nodes: int, nodes: Sequence[str] = ()) -> list[Event]:
        nodes = list(nodes)
        ray = self._from_ray(nodes) if nodes else {}
        probes, failed = self._probe(job_id, nodes, num_nodes)
        events: list[Event] = []
        ray_on = self.ray_port is not None and (bool(ray) or not self._dead("ray"))
        for node in dict.fromkeys([*nodes, *probes]):
            probe = probes.get(node)
            if probe is not None:
                host = self._host_event(probe)
                if host is not None:
                    events.append(host)
            queried = []
            if ray_on or node in ray:
                where = f"{self._addrs.get(node, node)}:{self.ray_port}"
                queried.append(f"ray metrics {where} ({'answered' if node in ray else 'no answer'})")
            queried.append(f"srun --overlap {self.query[0]}" + ("" if probe is not None else " (no answer)"))
            if node in ray:
                ev = self._gpu_event(node, ray[node], None, "ray", queried)
            elif probe is not None:
                devices = parse_nvidia_smi_csv("\n".join(probe.gpu_lines)) if probe.gpu_rc == 0 else []
                said = probe.gpu_lines[0][:160] if probe.gpu_lines else "no output"
                reason = f"{self.query[0]} exited {probe.gpu_rc}: {said}" if not devices else None
                if probe.no_gpu:
                    reason = f"no GPU ({probe.no_gpu})"
                ev = self._gpu_event(node, devices, reason, "srun", queried)
            elif failed is not None:
                ev = self._gpu_event(node, None, f"no sample: {failed}", "srun", queried)
            else:
                continue
            if ev is not None:
                events.append(ev)
        if failed:
            print(f"rl-console follow: node sampling: {failed}", file=sys.stderr, flush=True)
        return events
