"""How many GPUs this process can see (for the plan's "more GPUs needed than visible" warning)."""

from __future__ import annotations

import os


def visible_gpus() -> int:
    """CUDA_VISIBLE_DEVICES when set (entries up to the first invalid one), else NVML's count, else 0."""
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        count = 0
        for entry in cvd.split(","):
            entry = entry.strip()
            if not entry or entry.startswith("-"):
                break
            count += 1
        return count
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return 0
