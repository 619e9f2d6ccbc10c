"""Resource samples on their own thread, for any sampler with ``sample_once()``: the supervisor's
(``console.monitor.sampler.ResourceSampler``) and the Slurm follower's (``slurm.gpu.NodeSampler``).

A hung NFS ``statvfs`` or NVML call blocks only this thread, never the supervisor's loop; samples
reach it through a queue (the event file has one writer). A sample that takes longer than
``stall_after_s`` is reported once in supervisor.log.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from typing import Any

from console.events import Event

STALL_AFTER_S = 10.0


class SamplerThread:
    def __init__(self, sampler: Any, interval: float = 1.0, stall_after_s: float = STALL_AFTER_S) -> None:
        self.sampler = sampler
        self.interval = interval
        self.stall_after_s = stall_after_s
        self.step: str | None = None
        self.events: queue.Queue[Event] = queue.Queue(maxsize=1000)
        self._stop = threading.Event()
        self._busy_since: float | None = None
        self._stall_noted = False
        self.dead: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="rl-console-resources", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._busy_since = time.monotonic()
            try:
                self.sampler.step = self.step
                for ev in self.sampler.sample_once():
                    try:
                        self.events.put_nowait(ev)
                    except queue.Full:
                        break
            except Exception as exc:  # noqa: BLE001 - reported once by the supervisor's thread
                self.dead = exc
                self._busy_since = None
                return
            self._busy_since = None
            self._stop.wait(self.interval)

    def drain(self) -> list[Event]:
        """Samples taken since the last call (never blocks)."""
        out: list[Event] = []
        while True:
            try:
                out.append(self.events.get_nowait())
            except queue.Empty:
                break
        busy = self._busy_since
        if busy is not None and time.monotonic() - busy > self.stall_after_s and not self._stall_noted:
            self._stall_noted = True
            print(
                f"rl-console supervisor: a resource sample has not returned for {self.stall_after_s:g} s "
                "(hung NVML or file system call); the run goes on without new samples",
                file=sys.stderr,
            )
            sys.stderr.flush()
        elif busy is None:
            self._stall_noted = False
        return out

    def stop(self, timeout: float = 2.0) -> bool:
        """Ask the thread to end; True when it did within ``timeout`` (a hung call leaves it behind)."""
        self._stop.set()
        self._thread.join(timeout)
        return not self._thread.is_alive()
