"""The machine's CPU time counters around a run (/proc/stat's aggregate `cpu` line, every CPU): what share of the
CPU time the machine wanted over an interval the hypervisor gave to other guests instead (steal).

The share is of the time wanted (user, nice, system, irq, softirq and steal), not of all time: a run that waits on
its device leaves the CPUs idle, and idle time cannot be stolen, so a share of all time would call an I/O-bound run
on a busy host quiet. `run.steal_retry` measures a run again where the host took more than a stated share.
"""

from __future__ import annotations

from pathlib import Path

STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
WANTED = ("user", "nice", "system", "irq", "softirq", "steal")
PROC_STAT = Path("/proc/stat")


def read(path: Path = PROC_STAT) -> dict[str, int]:
    """The aggregate `cpu` line's counters (clock ticks); a state the kernel does not print is 0."""
    for line in path.read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            values = [int(v) for v in fields[1 : 1 + len(STATES)]]
            return dict(zip(STATES, values + [0] * (len(STATES) - len(values))))
    raise ValueError(f"{path}: no aggregate cpu line")


def steal_share(before: dict[str, int], after: dict[str, int]) -> float | None:
    """Steal over the CPU time wanted between two readings; None where no CPU time was wanted (or counted)."""
    wanted = sum(after[k] - before[k] for k in WANTED)
    return (after["steal"] - before["steal"]) / wanted if wanted > 0 else None
