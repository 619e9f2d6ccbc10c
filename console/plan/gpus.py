"""How many GPUs this process can see (for the plan's "more GPUs needed than visible" warning)."""

from __future__ import annotations

import itertools
import os


def visible_gpus() -> int:
    """CUDA_VISIBLE_DEVICES when set (entries up to the first invalid one), else NVML's count, else 0."""
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        entries = [e.strip() for e in cvd.split(",")]
        return len(list(itertools.takewhile(lambda e: e and not e.startswith("-"), entries)))
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return 0
