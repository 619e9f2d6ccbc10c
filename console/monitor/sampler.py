"""A background thread that samples GPU and host state (1 Hz by default) and publishes
``gpu``/``host`` events to an EventBus."""

from __future__ import annotations

import threading
import time

from console.events import Event, EventBus
from console.monitor.gpu import GpuSampler
from console.monitor.host import HostSampler


class ResourceSampler:
    """Publishes ``gpu`` and ``host`` events every ``interval`` seconds until ``stop()``.

    An unavailable GPU state ("no NVIDIA driver") is published once, then only when it changes,
    so a run without GPUs does not fill events.jsonl with the same line.
    """

    def __init__(
        self,
        bus: EventBus,
        gpu: GpuSampler | None = None,
        host: HostSampler | None = None,
        interval: float = 1.0,
        step: str | None = None,
    ) -> None:
        self.bus = bus
        self.gpu = gpu if gpu is not None else GpuSampler()
        self.host = host if host is not None else HostSampler()
        self.interval = interval
        self.step = step
        self.samples = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_unavailable: str | None = None

    def start(self) -> ResourceSampler:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="rl-console-sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
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

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                for e in self.sample_once():
                    self.bus.publish(e)
            except Exception:  # noqa: BLE001 - a sampling hiccup must not kill the thread
                pass
            next_at += self.interval
            delay = next_at - time.monotonic()
            if delay < 0:
                next_at = time.monotonic()
                delay = 0
            self._stop.wait(delay)
