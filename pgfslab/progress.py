"""Progress lines for long stages: which run of how many, elapsed, ETA."""

from __future__ import annotations

import sys
import time


def fmt_s(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


class Progress:
    """Prints a status line at most every `every_s` seconds (always on a new line: logs stay readable)."""

    def __init__(self, label: str, every_s: float = 5.0) -> None:
        self.label = label
        self.every_s = every_s
        self._last = 0.0

    def update(self, text: str, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last >= self.every_s:
            self._last = now
            print(f"{self.label} {text}", file=sys.stderr, flush=True)
