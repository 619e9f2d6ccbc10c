"""GPU and host state as ``gpu``/``host`` events: one ``sample_once()`` per tick, taken on the
supervisor's sampling thread (``console.runs.sampling.SamplerThread``) and published by its loop."""

from __future__ import annotations

from console.events import Event
from console.monitor.gpu import GpuSampler
from console.monitor.host import HostSampler


class ResourceSampler:
    """``sample_once()`` -> a ``gpu`` and a ``host`` event, tagged with ``step``. An unavailable GPU state
    is reported once, then only when it changes (a run without GPUs does not repeat it every tick)."""

    def __init__(
        self, gpu: GpuSampler | None = None, host: HostSampler | None = None, step: str | None = None
    ) -> None:
        self.gpu = gpu if gpu is not None else GpuSampler()
        self.host = host if host is not None else HostSampler()
        self.step = step
        self.samples = 0
        self._last_unavailable: str | None = None

    def close(self) -> None:
        self.gpu.close()

    def sample_once(self) -> list[Event]:
        events: list[Event] = []
        g = self.gpu.sample()
        if g.available or g.reason != self._last_unavailable:
            events.append(Event("gpu", step=self.step, data=g.to_event_data(), t=g.t))
        self._last_unavailable = None if g.available else g.reason
        h = self.host.sample()
        events.append(Event("host", step=self.step, data=h.to_event_data(), t=h.t))
        self.samples += 1
        return events
