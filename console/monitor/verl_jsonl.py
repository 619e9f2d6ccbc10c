"""verl's file logger (``trainer.logger=[console,file]``): one ``{"step": N, "data": {...}}``
object per line in ``$VERL_FILE_LOGGER_PATH`` or ``<root>/<project>/<experiment>.jsonl``."""

from __future__ import annotations

import json
import math
import os

from console.events import Event
from console.monitor.progress_base import json_number
from console.monitor.tailer import Tailer


def _number(v: object) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str) and v.lower() in ("nan", "inf", "-inf", "infinity", "-infinity"):
        return float(v)
    return None


class VerlJsonlReader:
    """Incremental reader: ``poll()`` -> ``metrics`` events; ``metrics()`` -> NeMo-RL schema."""

    def __init__(self, path: str | os.PathLike[str], offset: int = 0) -> None:
        self._tailer = Tailer(path, offset=offset, max_line_bytes=16 << 20, emit_partial=False)
        self._data: dict[str, dict[int, float]] = {}
        self.bad_lines = 0

    @property
    def offset(self) -> int:
        return self._tailer.offset

    def poll(self) -> list[Event]:
        out: list[Event] = []
        for ln in self._tailer.poll():
            if not ln.text.strip() or ln.truncated:
                continue
            try:
                obj = json.loads(ln.text)
                step = int(obj["step"])
                raw = obj.get("data") or {}
            except (ValueError, KeyError, TypeError):
                self.bad_lines += 1
                continue
            values: dict[str, float | str] = {}
            for k, v in raw.items():
                num = _number(v)
                if num is None:
                    continue
                values[str(k)] = json_number(num)
                self._data.setdefault(str(k), {})[step] = num
            out.append(Event("metrics", data={"step": step, "values": values, "source": "verl-file"}))
        return out

    def metrics(self) -> dict[str, dict[str, float]]:
        return {
            tag: {str(s): v for s, v in sorted(steps.items())}
            for tag, steps in sorted(self._data.items())
            if any(not math.isnan(v) for v in steps.values()) or steps
        }
