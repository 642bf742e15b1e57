"""Where a run's wall time goes: the phases of one run, recorded in its run.json (`phases_s`).

A study is worth its measured intervals; everything around them (the process's start, mounting, the cache
drop, the server's start and stop, samplers, unmounting) is overhead. `Phases.lap(name)` charges the time
since the previous lap to `name`, so the laps add up to the run's wall time with nothing counted twice;
`benchmarks.measuring` sums them over a real study and prints the measuring share.

`measured` is the run's measured interval (the workload's configured duration, or the tool's own wall time
when it ended sooner); `tool_overhead` is the rest of the tool's wall time (its connection, pgbench's
vacuum of its tables, its final report).
"""

from __future__ import annotations

import os
import time


def process_age_s() -> float | None:
    """Seconds since this process was created (Python's start-up, imports and reading the config, when
    called first thing in a command); None where /proc cannot say."""
    try:
        with open("/proc/self/stat") as fh:
            stat = fh.read()
        # field 22 (starttime, clock ticks after boot); the command name (field 2) may hold spaces
        start_ticks = int(stat.rsplit(")", 1)[1].split()[19])
        return round(time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK"), 3)
    except (OSError, ValueError, IndexError):
        return None


class Phases:
    """Laps of a run: each `lap(name)` adds the time since the previous lap (or creation) to `name`."""

    def __init__(self) -> None:
        self._t = time.monotonic()
        self.s: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.add(name, now - self._t)
        self._t = now

    def add(self, name: str, seconds: float) -> None:
        self.s[name] = round(self.s.get(name, 0.0) + seconds, 3)

    def lap_tool(self, measured_s: float | None) -> None:
        """The lap of a workload's tool: up to `measured_s` (its measured interval; None: all of it) is
        `measured`, the rest `tool_overhead`."""
        now = time.monotonic()
        wall = now - self._t
        measured = wall if measured_s is None else min(wall, measured_s)
        self.add("measured", measured)
        self.add("tool_overhead", wall - measured)
        self._t = now

    def record(self) -> dict[str, float]:
        return dict(self.s)
