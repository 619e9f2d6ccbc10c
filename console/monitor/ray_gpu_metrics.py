"""NeMo-RL's Ray GPU metrics from TensorBoard (``logger.monitor_gpus=true``).

Tags: ``ray/node.<i>.gpu.<j>.util`` (percent), ``ray/node.<i>.gpu.<j>.mem_gb`` (GiB),
``ray/node.<i>.mem_gb`` and ``ray/node.<i>.mem_total_gb`` (host). The step is seconds since the
monitor started, not the training step (reference/notes-nemo-rl.md §5).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_GPU_RE = re.compile(r"^ray/node\.(\d+)\.gpu\.(\d+)\.(util|mem_gb)$")
_NODE_RE = re.compile(r"^ray/node\.(\d+)\.(mem_gb|mem_total_gb)$")


def _last(series: Mapping[str, Any]) -> tuple[int, float] | None:
    if not series:
        return None
    step = max(series, key=lambda s: int(s))
    return int(step), float(series[step])


def ray_gpu_summary(metrics: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Latest value per node/GPU (and peak GPU memory) from a ``{tag: {step: value}}`` mapping."""
    nodes: dict[int, dict[str, Any]] = {}
    for tag, series in metrics.items():
        if not tag.startswith("ray/node."):
            continue
        m = _GPU_RE.match(tag)
        if m:
            node = nodes.setdefault(int(m.group(1)), {"node": int(m.group(1)), "gpus": {}})
            gpu = node["gpus"].setdefault(int(m.group(2)), {"gpu": int(m.group(2))})
            last = _last(series)
            if last is None:
                continue
            if m.group(3) == "mem_gb":
                gpu["mem_gb"] = last[1]
                gpu["peak_mem_gb"] = max(float(v) for v in series.values())
            else:
                gpu["util"] = last[1]
            gpu["t"] = max(gpu.get("t", 0), last[0])
            continue
        m = _NODE_RE.match(tag)
        if m:
            node = nodes.setdefault(int(m.group(1)), {"node": int(m.group(1)), "gpus": {}})
            last = _last(series)
            if last is not None:
                node[m.group(2)] = last[1]
    out = []
    for i in sorted(nodes):
        node = dict(nodes[i])
        node["gpus"] = [node["gpus"][j] for j in sorted(node["gpus"])]
        out.append(node)
    return {"nodes": out}
