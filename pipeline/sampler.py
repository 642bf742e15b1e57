"""Samplers that run beside a workload and write /proc snapshots, timestamped on one clock.

Format (parsed by pipeline.parsers.meminfo): each sample is a line `@ <epoch seconds>` followed by
the file's verbatim content. Sampling is a thread that sleeps to absolute deadlines, so a slow
sample does not shift later ones; the cost of sampling is measured in `make bench`.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import TracebackType


class ProcSampler:
    """Copy a /proc file into `out` at `hz` samples per second until stopped."""

    def __init__(self, source: str | Path, out: Path, hz: float) -> None:
        self.source = Path(source)
        self.out = out
        self.period = 1.0 / hz
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"sampler:{self.source.name}", daemon=True)

    def _loop(self) -> None:
        next_t = time.monotonic()
        with open(self.out, "w", buffering=1 << 16) as fh:
            while not self._stop.is_set():
                with open(self.source) as src:
                    body = src.read()
                fh.write(f"@ {time.time():.6f}\n{body}")
                self.samples += 1
                next_t += self.period
                delay = next_t - time.monotonic()
                if delay < 0:  # fell behind: skip missed ticks instead of bursting
                    next_t = time.monotonic()
                    delay = 0
                self._stop.wait(delay)
            fh.flush()

    def __enter__(self) -> ProcSampler:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
